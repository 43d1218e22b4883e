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


WRONG = {
    "ch01-softargmax": [softargmax_forgot_beta, softargmax_wrong_axis, softargmax_overflows, softargmax_is_hard],
    "ch01-hardargmax": [hardargmax_returns_index, hardargmax_all_ties, hardargmax_wrong_axis],
    "ch01-soft-lookup": [lookup_forgot_beta, lookup_not_normalised, lookup_blends_keys, lookup_hard],
    "ch01-self-attention": [self_attention_columns, self_attention_forgot_beta, self_attention_returns_weights,
                            self_attention_unnormalised],
}
