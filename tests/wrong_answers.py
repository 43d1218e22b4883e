"""Typical wrong answers to each exercise; the checks must reject every one."""

import torch


# ch01-softargmax
def softargmax_forgot_beta(scores, beta=1.0):
    e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def softargmax_wrong_axis(scores, beta=1.0):
    z = beta * scores
    e = torch.exp(z - z.max())
    return e / e.sum(dim=0, keepdim=True)


def softargmax_overflows(scores, beta=1.0):
    e = torch.exp(beta * scores)  # no shift by the maximum: exp(1000) = inf
    return e / e.sum(dim=-1, keepdim=True)


def softargmax_is_hard(scores, beta=1.0):
    return torch.nn.functional.one_hot(scores.argmax(-1), scores.shape[-1]).float()


# ch01-hardargmax
def hardargmax_returns_index(scores):
    return scores.argmax(dim=-1)


def hardargmax_all_ties(scores):
    return (scores == scores.max(dim=-1, keepdim=True).values).float()


def hardargmax_wrong_axis(scores):
    index = scores.argmax(dim=0, keepdim=True)
    return torch.zeros_like(scores).scatter(0, index, 1.0)


# ch01-soft-lookup
def lookup_forgot_beta(query, keys, values, beta=1.0):
    return torch.softmax(keys @ query, -1) @ values


def lookup_not_normalised(query, keys, values, beta=1.0):
    return torch.exp(beta * (keys @ query)) @ values


def lookup_blends_keys(query, keys, values, beta=1.0):
    return torch.softmax(beta * (keys @ query), -1) @ keys


def lookup_hard(query, keys, values, beta=1.0):
    return values[(keys @ query).argmax()]


# ch01-self-attention
def self_attention_columns(X, beta=1.0):
    return torch.softmax(beta * (X @ X.T), dim=0) @ X  # normalises keys, not queries


def self_attention_forgot_beta(X, beta=1.0):
    return torch.softmax(X @ X.T, dim=-1) @ X


def self_attention_returns_weights(X, beta=1.0):
    return torch.softmax(beta * (X @ X.T), dim=-1)


def self_attention_unnormalised(X, beta=1.0):
    return torch.exp(beta * (X @ X.T)) @ X


# ch07-masked-mean
def mean_includes_padding(x, keep):
    return x.mean(dim=1)


def mean_divides_by_length(x, keep):
    return (x * keep.unsqueeze(-1)).sum(dim=1) / x.shape[1]


def mean_not_divided(x, keep):
    return (x * keep.unsqueeze(-1)).sum(dim=1)


# ch07-collate
def _pad(sequences, t, pad_id):
    tokens = torch.full((len(sequences), t), pad_id, dtype=torch.long)
    for i, seq in enumerate(sequences):
        tokens[i, : len(seq)] = torch.tensor(seq[:t])
    return tokens


def collate_pads_to_max_len(sequences, max_len, pad_id=0):
    tokens = _pad(sequences, max_len, pad_id)
    return tokens, tokens != pad_id


def collate_forgets_to_truncate(sequences, max_len, pad_id=0):
    t = max(len(s) for s in sequences)
    keep = torch.arange(t) < torch.tensor([len(s) for s in sequences]).unsqueeze(1)
    return _pad(sequences, t, pad_id), keep


def collate_inverted_mask(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    keep = torch.arange(t) < torch.tensor([len(s) for s in cut]).unsqueeze(1)
    return _pad(cut, t, pad_id), ~keep  # True at padding, PyTorch's key_padding_mask convention


def collate_ignores_pad_id(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    keep = torch.arange(t) < torch.tensor([len(s) for s in cut]).unsqueeze(1)
    return _pad(cut, t, 0), keep


WRONG = {
    "ch01-softargmax": [softargmax_forgot_beta, softargmax_wrong_axis, softargmax_overflows, softargmax_is_hard],
    "ch01-hardargmax": [hardargmax_returns_index, hardargmax_all_ties, hardargmax_wrong_axis],
    "ch01-soft-lookup": [lookup_forgot_beta, lookup_not_normalised, lookup_blends_keys, lookup_hard],
    "ch01-self-attention": [self_attention_columns, self_attention_forgot_beta, self_attention_returns_weights,
                            self_attention_unnormalised],
    "ch07-masked-mean": [mean_includes_padding, mean_divides_by_length, mean_not_divided],
    "ch07-collate": [collate_pads_to_max_len, collate_forgets_to_truncate, collate_inverted_mask, collate_ignores_pad_id],
}
