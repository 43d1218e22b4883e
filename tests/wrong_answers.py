"""Plausible wrong answers to each exercise, written as a learner's exercise cell would be.

Every one must be rejected, the same way by the notebook's check and by the grader
(tests/test_grading.py). Each entry: (a short name, the cell's code).
"""

WRONG = {
    "ch01-softargmax": [
        ("forgot beta", """
def softargmax(scores, beta=1.0):
    e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("normalises the first axis", """
def softargmax(scores, beta=1.0):
    z = beta * scores
    e = torch.exp(z - z.max())
    return e / e.sum(dim=0, keepdim=True)
"""),
        ("no shift: overflows", """
def softargmax(scores, beta=1.0):
    e = torch.exp(beta * scores)
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("hard, not soft", """
def softargmax(scores, beta=1.0):
    return F.one_hot(scores.argmax(-1), scores.shape[-1]).to(scores.dtype)
"""),
        ("shifts by the max of the whole tensor", """
def softargmax(scores, beta=1.0):
    z = beta * scores
    e = torch.exp(z - z.max())
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("shifts by the row minimum", """
def softargmax(scores, beta=1.0):
    z = beta * scores
    e = torch.exp(z - z.min(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("modifies the scores in place", """
def softargmax(scores, beta=1.0):
    scores *= beta
    scores -= scores.max(dim=-1, keepdim=True).values
    e = scores.exp()
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("uses torch.softmax, which the statement forbids", """
def softargmax(scores, beta=1.0):
    return torch.softmax(beta * scores, dim=-1)
"""),
        ("returns float64", """
def softargmax(scores, beta=1.0):
    z = (beta * scores).double()
    e = torch.exp(z - z.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("dim=1 (right only for 2-D input)", """
def softargmax(scores, beta=1.0):
    z = beta * scores
    if z.dim() == 1:
        z = z.unsqueeze(0)
        squeeze = True
    else:
        squeeze = False
    e = torch.exp(z - z.max(dim=1, keepdim=True).values)
    out = e / e.sum(dim=1, keepdim=True)
    return out.squeeze(0) if squeeze else out
"""),
        ("returns a NumPy array", """
def softargmax(scores, beta=1.0):
    z = beta * scores.numpy()
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""),
        ("uses companion's own softargmax", """
from companion import softargmax
"""),
        ("shifts by the max of the unscaled scores (found by a learner's trial)", """
def softargmax(scores, beta=1.0):
    e = torch.exp(beta * scores - scores.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("a NumPy round trip: right values, no gradient", """
def softargmax(scores, beta=1.0):
    z = beta * scores.detach().numpy()
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return torch.from_numpy(e / e.sum(axis=-1, keepdims=True))
"""),
    ],
    "ch01-hardargmax": [
        ("returns the index", """
def hardargmax(scores):
    return scores.argmax(dim=-1)
"""),
        ("a 1 at every tied maximum", """
def hardargmax(scores):
    return (scores == scores.max(dim=-1, keepdim=True).values).to(scores.dtype)
"""),
        ("the first axis", """
def hardargmax(scores):
    index = scores.argmax(dim=0, keepdim=True)
    return torch.zeros_like(scores).scatter(0, index, 1.0)
"""),
        ("int64 from F.one_hot", """
def hardargmax(scores):
    return F.one_hot(scores.argmax(-1), scores.shape[-1])
"""),
        ("bool", """
def hardargmax(scores):
    return scores == scores.max(dim=-1, keepdim=True).values
"""),
        ("always float32", """
def hardargmax(scores):
    return F.one_hot(scores.argmax(-1), scores.shape[-1]).float()
"""),
        ("the last maximum on ties", """
def hardargmax(scores):
    n = scores.shape[-1]
    index = n - 1 - scores.flip(-1).argmax(dim=-1, keepdim=True)
    return torch.zeros_like(scores).scatter(-1, index, 1.0)
"""),
        ("writes into the scores", """
def hardargmax(scores):
    index = scores.argmax(dim=-1, keepdim=True)
    return scores.zero_().scatter_(-1, index, 1.0)
"""),
        ("dim=1 (right only for 2-D input)", """
def hardargmax(scores):
    if scores.dim() == 1:
        return hardargmax(scores.unsqueeze(0)).squeeze(0)
    index = scores.argmax(dim=1, keepdim=True)
    return torch.zeros_like(scores).scatter(1, index, 1.0)
"""),
        ("a list", """
def hardargmax(scores):
    i = int(scores.argmax())
    return [1.0 if j == i else 0.0 for j in range(len(scores))]
"""),
        ("topk: which of equal values comes first is not promised", """
def hardargmax(scores):
    index = scores.topk(1, dim=-1).indices
    return torch.zeros_like(scores).scatter(-1, index, 1.0)
"""),
        ("sort: which of equal values comes first is not promised", """
def hardargmax(scores):
    index = scores.sort(dim=-1, descending=True).indices[..., :1]
    return torch.zeros_like(scores).scatter(-1, index, 1.0)
"""),
    ],
    "ch01-soft-lookup": [
        ("forgot beta", """
def soft_lookup(query, keys, values, beta=1.0):
    return torch.softmax(keys @ query, -1) @ values
"""),
        ("not normalised", """
def soft_lookup(query, keys, values, beta=1.0):
    return torch.exp(beta * (keys @ query)) @ values
"""),
        ("blends the keys", """
def soft_lookup(query, keys, values, beta=1.0):
    return torch.softmax(beta * (keys @ query), -1) @ keys
"""),
        ("hard lookup", """
def soft_lookup(query, keys, values, beta=1.0):
    return values[(keys @ query).argmax()]
"""),
        ("hand-written exp without a shift", """
def soft_lookup(query, keys, values, beta=1.0):
    e = torch.exp(beta * (keys @ query))
    return (e / e.sum()) @ values
"""),
        ("returns the weights", """
def soft_lookup(query, keys, values, beta=1.0):
    return torch.softmax(beta * (keys @ query), -1)
"""),
        ("1/sqrt(d) instead of beta", """
def soft_lookup(query, keys, values, beta=1.0):
    return torch.softmax(keys @ query / math.sqrt(len(query)), -1) @ values
"""),
        ("scales the query in place", """
def soft_lookup(query, keys, values, beta=1.0):
    query *= beta
    return torch.softmax(keys @ query, -1) @ values
"""),
        ("sums the values", """
def soft_lookup(query, keys, values, beta=1.0):
    return values.sum(dim=0)
"""),
        ("keys.T @ query (a shape error)", """
def soft_lookup(query, keys, values, beta=1.0):
    return torch.softmax(beta * (keys.T @ query), -1) @ values
"""),
        ("float32 weights for float64 inputs", """
def soft_lookup(query, keys, values, beta=1.0):
    scores = (beta * (keys @ query)).to(torch.float32)
    weights = torch.softmax(scores, dim=-1).to(values.dtype)
    return weights @ values
"""),
    ],
    "ch01-self-attention": [
        ("normalises the columns", """
def self_attention(X, beta=1.0):
    return torch.softmax(beta * (X @ X.T), dim=0) @ X
"""),
        ("forgot beta", """
def self_attention(X, beta=1.0):
    return torch.softmax(X @ X.T, dim=-1) @ X
"""),
        ("returns the weights", """
def self_attention(X, beta=1.0):
    return torch.softmax(beta * (X @ X.T), dim=-1)
"""),
        ("not normalised", """
def self_attention(X, beta=1.0):
    return torch.exp(beta * (X @ X.T)) @ X
"""),
        ("hand-written exp without a shift", """
def self_attention(X, beta=1.0):
    e = torch.exp(beta * (X @ X.T))
    return (e / e.sum(dim=-1, keepdim=True)) @ X
"""),
        ("X^T X instead of X X^T", """
def self_attention(X, beta=1.0):
    return X @ torch.softmax(beta * (X.T @ X), dim=-1)
"""),
        ("scales X in place", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.T), dim=-1)
    X *= 1.0
    X.copy_(A @ X)
    return X
"""),
        ("returns H transposed", """
def self_attention(X, beta=1.0):
    return (torch.softmax(beta * (X @ X.T), dim=-1) @ X).T
"""),
        ("divides by sqrt(d) as well", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.T) / math.sqrt(X.shape[-1]), dim=-1)
    return A @ X
"""),
        ("float64 result", """
def self_attention(X, beta=1.0):
    X64 = X.double()
    return torch.softmax(beta * (X64 @ X64.T), dim=-1) @ X64
"""),
        ("shifts by the max of the whole score matrix", """
def self_attention(X, beta=1.0):
    S = beta * (X @ X.T)
    e = torch.exp(S - S.max())
    return (e / e.sum(dim=-1, keepdim=True)) @ X
"""),
        ("shifts by the diagonal x_i . x_i", """
def self_attention(X, beta=1.0):
    S = beta * (X @ X.T)
    e = torch.exp(S - S.diagonal()[:, None])
    return (e / e.sum(dim=-1, keepdim=True)) @ X
"""),
    ],
    "ch02-attend-one": [
        ("divides by sqrt(d_model)", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_q
    s = (X @ W_k) @ q / math.sqrt(X.shape[1])
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("divides by sqrt(d_v)", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_q
    s = (X @ W_k) @ q / math.sqrt(W_v.shape[1])
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("divides by d_k, not its square root", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_q
    s = (X @ W_k) @ q / W_q.shape[1]
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("no scaling", """
def attend_one(X, i, W_q, W_k, W_v):
    s = (X @ W_k) @ (X[i] @ W_q)
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("blends the keys, not the values", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_q
    s = (X @ W_k) @ q / math.sqrt(W_q.shape[1])
    return torch.softmax(s, dim=-1) @ (X @ W_k)
"""),
        ("the query from W_k", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_k
    s = (X @ W_k) @ q / math.sqrt(W_q.shape[1])
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("keeps a (1, d_v) row", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i:i + 1] @ W_q
    s = q @ (X @ W_k).T / math.sqrt(W_q.shape[1])
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("softmax over the wrong axis of a (1, t) row", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i:i + 1] @ W_q
    s = q @ (X @ W_k).T / math.sqrt(W_q.shape[1])
    return (torch.softmax(s, dim=0) @ (X @ W_v))[0]
"""),
        ("exp without the shift: overflows", """
def attend_one(X, i, W_q, W_k, W_v):
    s = (X @ W_k) @ (X[i] @ W_q) / math.sqrt(W_q.shape[1])
    e = torch.exp(s)
    return (e / e.sum()) @ (X @ W_v)
"""),
        ("query from the first token always", """
def attend_one(X, i, W_q, W_k, W_v):
    s = (X @ W_k) @ (X[0] @ W_q) / math.sqrt(W_q.shape[1])
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
        ("rebuilt from Python floats (no gradient)", """
def attend_one(X, i, W_q, W_k, W_v):
    s = (X @ W_k) @ (X[i] @ W_q) / math.sqrt(W_q.shape[1])
    z = torch.softmax(s, dim=-1) @ (X @ W_v)
    return torch.tensor(z.tolist(), dtype=X.dtype)
"""),
    ],
    "ch02-equivariance-gap": [
        ("the inverse permutation on one side", """
def equivariance_gap(f, X, perm):
    inverse = torch.argsort(perm)
    return (f(X[..., perm, :]) - f(X)[..., inverse, :]).abs().max()
"""),
        ("no absolute value", """
def equivariance_gap(f, X, perm):
    return (f(X[..., perm, :]) - f(X)[..., perm, :]).max()
"""),
        ("no absolute value, the other order", """
def equivariance_gap(f, X, perm):
    return (f(X)[..., perm, :] - f(X[..., perm, :])).max()
"""),
        ("the mean, not the maximum", """
def equivariance_gap(f, X, perm):
    return (f(X[..., perm, :]) - f(X)[..., perm, :]).abs().mean()
"""),
        ("permutes the first axis (the batch, for 3-D X)", """
def equivariance_gap(f, X, perm):
    return (f(X[perm]) - f(X)[perm]).abs().max()
"""),
        ("permutes the features", """
def equivariance_gap(f, X, perm):
    return (f(X[..., perm]) - f(X)[..., perm]).abs().max()
"""),
        ("returns a Python float", """
def equivariance_gap(f, X, perm):
    return (f(X[..., perm, :]) - f(X)[..., perm, :]).abs().max().item()
"""),
        ("compares f(X) with X permuted", """
def equivariance_gap(f, X, perm):
    return (f(X[..., perm, :]) - X[..., perm, :]).abs().max()
"""),
        ("forgets to permute the outputs", """
def equivariance_gap(f, X, perm):
    return (f(X[..., perm, :]) - f(X)).abs().max()
"""),
        ("the norm of the difference", """
def equivariance_gap(f, X, perm):
    return torch.linalg.norm(f(X[..., perm, :]) - f(X)[..., perm, :])
"""),
        ("handles at most one batch dimension", """
def equivariance_gap(f, X, perm):
    Xp = X[perm] if X.dim() == 2 else X[:, perm]
    Y = f(X)
    Yp = Y[perm] if Y.dim() == 2 else Y[:, perm]
    return (f(Xp) - Yp).abs().max()
"""),
    ],
    "ch02-cross-attention": [
        ("queries and keys swapped", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, Y @ W_k, X @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("self-attention on Y", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, Y @ W_k, Y @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("values from Y", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, Y @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("softmax over the queries", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-2)
    return A @ V
"""),
        ("divides by sqrt(d_v)", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(V.shape[-1]), dim=-1)
    return A @ V
"""),
        ("K.T, right only for 2-D inputs", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    A = torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("squeezes a batch of 1", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = (Y @ W_q).squeeze(0), (X @ W_k).squeeze(0), (X @ W_v).squeeze(0)
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("reshapes the keys and values with the query's length", """
def cross_attention(Y, X, W_q, W_k, W_v):
    t = Y.shape[-2]
    Q = Y @ W_q
    K = (X @ W_k).reshape(*Y.shape[:-2], t, -1)
    V = (X @ W_v).reshape(*Y.shape[:-2], t, -1)
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("transposes the output", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return (A @ V).transpose(-2, -1)
"""),
        ("computed in float32", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = (Y @ W_q).float(), (X @ W_k).float(), (X @ W_v).float()
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
    ],
    "ch02-lengths-to-mask": [
        ("the opposite convention (True = padding)", """
def lengths_to_mask(lengths, t_k):
    return (torch.arange(t_k) >= lengths[:, None])[:, None, :]
"""),
        ("shape (batch, t_k): broadcasts against the wrong axis", """
def lengths_to_mask(lengths, t_k):
    return torch.arange(t_k) < lengths[:, None]
"""),
        ("width from the longest sequence, not t_k", """
def lengths_to_mask(lengths, t_k):
    return (torch.arange(int(lengths.max())) < lengths[:, None])[:, None, :]
"""),
        ("off by one (<=)", """
def lengths_to_mask(lengths, t_k):
    return (torch.arange(t_k) <= lengths[:, None])[:, None, :]
"""),
        ("a float mask", """
def lengths_to_mask(lengths, t_k):
    return (torch.arange(t_k) < lengths[:, None])[:, None, :].float()
"""),
        ("shape (batch, t_k, 1)", """
def lengths_to_mask(lengths, t_k):
    return (torch.arange(t_k) < lengths[:, None])[:, :, None]
"""),
        ("a square (batch, t_k, t_k) mask of both axes", """
def lengths_to_mask(lengths, t_k):
    keep = torch.arange(t_k) < lengths[:, None]
    return keep[:, :, None] & keep[:, None, :]
"""),
        ("the mask of an int64 dtype", """
def lengths_to_mask(lengths, t_k):
    return (torch.arange(t_k) < lengths[:, None]).long()[:, None, :]
"""),
        ("a Python loop that skips empty sequences", """
def lengths_to_mask(lengths, t_k):
    mask = torch.zeros(len(lengths), 1, t_k, dtype=torch.bool)
    for b, n in enumerate(lengths.tolist()):
        mask[b, 0, :n] = True
    mask[:, 0, 0] = True
    return mask
"""),
    ],
    "ch02-masked-attention": [
        ("the opposite convention: masks where True", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    A = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
    return torch.nan_to_num(A) @ V
"""),
        ("NaN on a fully masked row", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ V
"""),
        ("a uniform row instead of zeros (finfo.min, no fix)", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
    return torch.softmax(s, dim=-1) @ V
"""),
        ("multiplies the scores by the mask", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]) * mask
    return torch.softmax(s, dim=-1) @ V
"""),
        ("masks after the softmax without renormalising", """
def masked_attention(Q, K, V, mask):
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return (A * mask) @ V
"""),
        ("softmax over the queries", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    A = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-2)
    return torch.nan_to_num(A) @ V
"""),
        ("ignores the mask", """
def masked_attention(Q, K, V, mask):
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V
"""),
        ("uses F.scaled_dot_product_attention, which the statement forbids", """
def masked_attention(Q, K, V, mask):
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
"""),
        ("no scaling", """
def masked_attention(Q, K, V, mask):
    s = (Q @ K.transpose(-2, -1)).masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(s, dim=-1)) @ V
"""),
        ("-1e4 for masked scores: a fully masked row becomes uniform", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    s.masked_fill_(~mask, -1e4)
    return torch.softmax(s, dim=-1) @ V
"""),
        ("an additive -inf bias: NaN gradients on a fully masked row", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    bias = torch.zeros_like(s).masked_fill(~mask, float("-inf"))
    a = torch.nan_to_num(torch.softmax(s + bias, dim=-1), nan=0.0)
    return a @ V
"""),
        ("a finite fill (-30): masked keys keep a little weight", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    a = torch.softmax(s.masked_fill(~mask, -30.0), dim=-1)
    return torch.where(mask.any(dim=-1, keepdim=True), a, 0.0) @ V
"""),
        ("masks after the softmax and renormalises", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    a = torch.softmax(s, dim=-1) * mask
    a = a / a.sum(dim=-1, keepdim=True).clamp_min(1e-30)
    return a @ V
"""),
        ("detached: no gradient", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(a, nan=0.0).detach() @ V
"""),
    ],
    "ch03-dot-variance": [
        ("variance over the components, not the samples", """
def dot_variance(q, k):
    return (q * k).var(dim=-1).mean()
"""),
        ("every sample against every other (q @ k.T)", """
def dot_variance(q, k):
    return (q @ k.T).var()
"""),
        ("divides by n (biased)", """
def dot_variance(q, k):
    return (q * k).sum(dim=-1).var(unbiased=False)
"""),
        ("the standard deviation", """
def dot_variance(q, k):
    return (q * k).sum(dim=-1).std()
"""),
        ("the mean of the squares (assumes mean 0)", """
def dot_variance(q, k):
    return ((q * k).sum(dim=-1) ** 2).mean()
"""),
        ("dot products over the samples axis", """
def dot_variance(q, k):
    return (q * k).sum(dim=0).var()
"""),
        ("returns a Python float", """
def dot_variance(q, k):
    return float((q * k).sum(dim=-1).var())
"""),
        ("the theory's d_k, not a measurement", """
def dot_variance(q, k):
    return torch.tensor(float(q.shape[-1]), dtype=q.dtype)
"""),
        ("variance of all the products q_i k_i", """
def dot_variance(q, k):
    return (q * k).var()
"""),
    ],
    "ch03-scaled-scores": [
        ("divides by d_k", """
def scaled_scores(Q, K):
    return Q @ K.transpose(-2, -1) / Q.shape[-1]
"""),
        ("divides by sqrt(t_q)", """
def scaled_scores(Q, K):
    return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-2])
"""),
        ("divides by sqrt(t_k)", """
def scaled_scores(Q, K):
    return Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-2])
"""),
        ("no scale", """
def scaled_scores(Q, K):
    return Q @ K.transpose(-2, -1)
"""),
        ("multiplies by sqrt(d_k)", """
def scaled_scores(Q, K):
    return Q @ K.transpose(-2, -1) * math.sqrt(Q.shape[-1])
"""),
        ("a rounded square root (math.isqrt)", """
def scaled_scores(Q, K):
    return Q @ K.transpose(-2, -1) / math.isqrt(Q.shape[-1])
"""),
        ("K.T, right only for 2-D inputs", """
def scaled_scores(Q, K):
    return Q @ K.T / math.sqrt(Q.shape[-1])
"""),
        ("Q^T K instead of Q K^T", """
def scaled_scores(Q, K):
    return Q.transpose(-2, -1) @ K / math.sqrt(Q.shape[-1])
"""),
        ("computed in float32", """
def scaled_scores(Q, K):
    return Q.float() @ K.float().transpose(-2, -1) / math.sqrt(Q.shape[-1])
"""),
        ("permute(0, 2, 1): right for 3-D only", """
def scaled_scores(Q, K):
    Kt = K.T if K.dim() == 2 else K.permute(0, 2, 1)
    return Q @ Kt / math.sqrt(Q.shape[-1])
"""),
    ],
    "ch03-prescale": [
        ("d_k^(-1/2) on both", """
def prescale(Q, K):
    s = Q.shape[-1] ** -0.5
    return Q * s, K * s
"""),
        ("the whole 1/sqrt(d_k) on Q only", """
def prescale(Q, K):
    return Q / math.sqrt(Q.shape[-1]), K
"""),
        ("the length instead of d_k", """
def prescale(Q, K):
    return Q * Q.shape[0] ** -0.25, K * K.shape[0] ** -0.25
"""),
        ("scales in place", """
def prescale(Q, K):
    s = Q.shape[-1] ** -0.25
    Q *= s
    K *= s
    return Q, K
"""),
        ("returns the product", """
def prescale(Q, K):
    s = Q.shape[-1] ** -0.25
    return (Q * s) @ (K * s).transpose(-2, -1)
"""),
        ("d_k^(1/4): multiplies up", """
def prescale(Q, K):
    s = Q.shape[-1] ** 0.25
    return Q * s, K * s
"""),
        ("d_k^(-1/4) from the first dimension (right only for 2-D)", """
def prescale(Q, K):
    s = Q.shape[1] ** -0.25
    return Q * s, K * s
"""),
        ("in float32", """
def prescale(Q, K):
    s = torch.tensor(Q.shape[-1] ** -0.25)
    return Q.float() * s, K.float() * s
"""),
        ("detached: no gradient", """
def prescale(Q, K):
    s = Q.shape[-1] ** -0.25
    return (Q * s).detach(), (K * s).detach()
"""),
    ],
    "ch03-row-entropy": [
        ("NaN at zero weights", """
def row_entropy(A):
    return -(A * A.log()).sum(dim=-1)
"""),
        ("log base 2 (bits, not nats)", """
def row_entropy(A):
    return -torch.special.xlogy(A, A).sum(dim=-1) / math.log(2)
"""),
        ("no minus sign", """
def row_entropy(A):
    return torch.special.xlogy(A, A).sum(dim=-1)
"""),
        ("the mean over the row, not the sum", """
def row_entropy(A):
    return -torch.special.xlogy(A, A).mean(dim=-1)
"""),
        ("sums over the first axis", """
def row_entropy(A):
    return -torch.special.xlogy(A, A).sum(dim=0)
"""),
        ("an epsilon inside the log", """
def row_entropy(A):
    return -(A * (A + 1e-6).log()).sum(dim=-1)
"""),
        ("nan_to_num after the fact, but sums over dim=1", """
def row_entropy(A):
    return -torch.nan_to_num(A * A.log()).sum(dim=1)
"""),
        ("the entropy of the whole tensor", """
def row_entropy(A):
    return -torch.special.xlogy(A, A).sum()
"""),
        ("in float32", """
def row_entropy(A):
    A = A.float()
    return -torch.special.xlogy(A, A).sum(dim=-1)
"""),
        ("clamps the log's input at 0.01", """
def row_entropy(A):
    return -(A * A.clamp_min(1e-2).log()).sum(-1)
"""),
    ],
    "ch04-split-heads": [
        ("reshape without the transpose", """
def split_heads(x, num_heads):
    batch, t, d_model = x.shape
    return x.reshape(batch, num_heads, t, d_model // num_heads)
"""),
        ("view without the transpose", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.view(b, num_heads, t, d // num_heads)
"""),
        ("(d_k, num_heads) order: interleaved heads", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, d // num_heads, num_heads).permute(0, 3, 1, 2)
"""),
        ("transposes first, then reshapes", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.transpose(1, 2).reshape(b, num_heads, t, d // num_heads)
"""),
        ("no transpose at all: (batch, t, h, d_k)", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads)
"""),
        ("transpose(1, 3): (batch, d_k, h, t)", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads).transpose(1, 3)
"""),
        ("chunks along t instead of d_model", """
def split_heads(x, num_heads):
    return torch.stack(x.chunk(num_heads, dim=1), dim=1)
"""),
        ("heads in reverse order", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads).transpose(1, 2).flip(1)
"""),
        ("fixed sizes from the first example", """
def split_heads(x, num_heads):
    return x.reshape(1, 2, 2, 2).transpose(1, 2)
"""),
        ("numpy round trip: no gradient", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    a = x.detach().numpy().reshape(b, t, num_heads, d // num_heads)
    return torch.from_numpy(a.transpose(0, 2, 1, 3).copy())
"""),
    ],
    "ch04-merge-heads": [
        ("reshape without the transpose", """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.reshape(b, t, h * d_k)
"""),
        ("view after the transpose (not contiguous)", """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.transpose(1, 2).view(b, t, h * d_k)
"""),
        ("interleaved: d_k before heads", """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, t, h * d_k)
"""),
        ("heads in reverse order", """
def merge_heads(x):
    return torch.cat(list(x.unbind(dim=1))[::-1], dim=-1)
"""),
        ("averages the heads", """
def merge_heads(x):
    return x.mean(dim=1)
"""),
        ("forgets to flatten: (batch, t, h, d_k)", """
def merge_heads(x):
    return x.transpose(1, 2)
"""),
        ("squeezes the batch axis", """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d_k).squeeze()
"""),
        ("concatenates along t", """
def merge_heads(x):
    return torch.cat(x.unbind(dim=1), dim=1)
"""),
        ("float32 result", """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d_k).float()
"""),
    ],
    "ch04-multi-head": [
        ("forgets W_o", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    heads = []
    for i in range(W_q.shape[0]):
        q, k, v = X_q @ W_q[i], X_kv @ W_k[i], X_kv @ W_v[i]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        heads.append(a @ v)
    return torch.cat(heads, dim=-1)
"""),
        ("heads concatenated in reverse order", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    heads = []
    for i in reversed(range(W_q.shape[0])):
        q, k, v = X_q @ W_q[i], X_kv @ W_k[i], X_kv @ W_v[i]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        heads.append(a @ v)
    return torch.cat(heads, dim=-1) @ W_o
"""),
        ("divides by sqrt(d_model)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(X_q.shape[-1])
    return merge_heads(torch.softmax(s, dim=-1) @ V) @ W_o
"""),
        ("divides by sqrt(d_v)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(V.shape[-1])
    return merge_heads(torch.softmax(s, dim=-1) @ V) @ W_o
"""),
        ("keys and values from X_q (self-attention only)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_q, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_q, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    return merge_heads(torch.softmax(s, dim=-1) @ V) @ W_o
"""),
        ("merges without the transpose", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    Z = torch.softmax(s, dim=-1) @ V
    b, h, t, d_v = Z.shape
    return Z.reshape(b, t, h * d_v) @ W_o
"""),
        ("softmax over the queries", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    return merge_heads(torch.softmax(s, dim=-2) @ V) @ W_o
"""),
        ("W_o applied to every head, then summed", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    out = 0
    for i in range(W_q.shape[0]):
        q, k, v = X_q @ W_q[i], X_kv @ W_k[i], X_kv @ W_v[i]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        out = out + (a @ v) @ W_o[:v.shape[-1]]
    return out
"""),
        ("no scaling", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    return merge_heads(torch.softmax(Q @ K.transpose(-2, -1), dim=-1) @ V) @ W_o
"""),
        ("computes in float32", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    X_q, X_kv, W_q, W_k, W_v, W_o = (x.float() for x in (X_q, X_kv, W_q, W_k, W_v, W_o))
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    return merge_heads(torch.softmax(s, dim=-1) @ V) @ W_o
"""),
        ("uses F.scaled_dot_product_attention (forbidden)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    return merge_heads(F.scaled_dot_product_attention(Q, K, V)) @ W_o
"""),
    ],
    "ch04-ablate-head": [
        ("zeroes Z in place", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    Z[..., head * d_k:(head + 1) * d_k] = 0
    return Z
"""),
        ("every num_heads-th column (interleaved)", """
def ablate_head(Z, num_heads, head):
    Z = Z.clone()
    Z[..., head::num_heads] = 0
    return Z
"""),
        ("starts at head * num_heads", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    Z = Z.clone()
    Z[..., head * num_heads:head * num_heads + d_k] = 0
    return Z
"""),
        ("zeroes a token, not a head", """
def ablate_head(Z, num_heads, head):
    Z = Z.clone()
    Z[:, head] = 0
    return Z
"""),
        ("keeps only the head", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    keep = torch.zeros(Z.shape[-1], dtype=Z.dtype)
    keep[head * d_k:(head + 1) * d_k] = 1
    return Z * keep
"""),
        ("heads numbered from 1", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    Z = Z.clone()
    Z[..., (head - 1) * d_k:head * d_k] = 0
    return Z
"""),
        ("assumes a batch axis: Z[:, :, a:b]", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    Z = Z.clone()
    Z[:, :, head * d_k:(head + 1) * d_k] = 0
    return Z
"""),
        ("block one column too short", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    Z = Z.clone()
    Z[..., head * d_k:(head + 1) * d_k - 1] = 0
    return Z
"""),
        ("detaches: no gradient", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    Z = Z.detach().clone()
    Z[..., head * d_k:(head + 1) * d_k] = 0
    return Z
"""),
        ("removes the columns instead of zeroing them", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    return torch.cat([Z[..., :head * d_k], Z[..., (head + 1) * d_k:]], dim=-1)
"""),
    ],
    "ch05-sinusoidal": [
        ("sine and cosine swapped", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.cos(angle), torch.sin(angle)
    return E.float()
"""),
        ("exponent i / d instead of 2i / d", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(d_model // 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E.float()
"""),
        ("positions start at 1", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(1, max_len + 1, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E.float()
"""),
        ("sines in the first half, cosines in the second", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).float()
"""),
        ("exponent uses the column index for both columns of a pair", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angle = p / 10000 ** (j / d_model)
    E = torch.where(j.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
    return E.float()
"""),
        ("multiplies by the frequency term instead of dividing", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p * 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E.float()
"""),
        ("base 1000", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 1000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E.float()
"""),
        ("rows and columns swapped (d_model, max_len)", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E.T.float()
"""),
        ("returns float64", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E
"""),
        ("the frequencies come from max_len", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / max_len)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2], E[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return E.float()
"""),
        ("angles computed in float32 (wrong for long tables)", """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len).float()[:, None]
    div = 10000 ** (torch.arange(0, d_model, 2).float() / d_model)
    E = torch.zeros(max_len, d_model)
    E[:, 0::2], E[:, 1::2] = torch.sin(p / div), torch.cos(p / div)
    return E
"""),
    ],
    "ch05-shift": [
        ("blocks transposed (shifts by -k)", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        b = k * 10000 ** (-2 * i / d_model)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.cos(b), -math.sin(b)], [math.sin(b), math.cos(b)]])
    return M
"""),
        ("one frequency for every block", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        b = float(k)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])
    return M
"""),
        ("shift by one position whatever k", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        b = 10000 ** (-2 * i / d_model)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])
    return M
"""),
        ("exponent i / d", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        b = k * 10000 ** (-i / d_model)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])
    return M
"""),
        ("cos and sin swapped in the block", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        b = k * 10000 ** (-2 * i / d_model)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.sin(b), math.cos(b)], [-math.cos(b), math.sin(b)]])
    return M
"""),
        ("the table's rows E[k], not a matrix", """
def shift_matrix(k, d_model):
    i = torch.arange(0, d_model, 2)
    b = k * 10000 ** (-i / d_model)
    return torch.diag(torch.stack([torch.sin(b), torch.cos(b)], -1).flatten()).float()
"""),
        ("blocks placed at i, i + d_model / 2 (two halves)", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    h = d_model // 2
    for i in range(h):
        b = k * 10000 ** (-2 * i / d_model)
        c, s = math.cos(b), math.sin(b)
        M[i, i], M[i, i + h], M[i + h, i], M[i + h, i + h] = c, s, -s, c
    return M
"""),
        ("float64", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        b = k * 10000 ** (-2 * i / d_model)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])
    return M
"""),
        ("ignores the sign of k", """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        b = abs(k) * 10000 ** (-2 * i / d_model)
        M[2*i:2*i+2, 2*i:2*i+2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])
    return M
"""),
    ],
    "ch05-rope": [
        ("rotate half (pairs i and i + d_k / 2)", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., :d_k // 2], x[..., d_k // 2:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
"""),
        ("turns the wrong way (clockwise)", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos + b * sin, -a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("positions start at 1", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(1, t + 1, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("exponent i / d_k", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(d_k // 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("pairs written back as two halves", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
"""),
        ("t taken from axis 1", """
def rope(x):
    t, d_k = x.shape[1], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("rotates x in place", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2].clone(), x[..., 1::2].clone()
    with torch.no_grad():
        x[..., 0::2] = a * cos - b * sin
        x[..., 1::2] = a * sin + b * cos
    return x
"""),
        ("returns float32 for float64 input", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2) / d_k)
    angle = torch.arange(t)[:, None] * theta
    cos, sin = torch.cos(angle).float(), torch.sin(angle).float()
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("the same angle for every pair", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    angle = torch.arange(t, dtype=torch.float64)[:, None].expand(t, d_k // 2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("detaches (no gradient)", """
def rope(x):
    t, d_k = x.shape[-2], x.shape[-1]
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    a, b = x.detach()[..., 0::2], x.detach()[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
"""),
        ("float32 angles for a float64 x", """
def rope(x):
    t, d = x.shape[-2:]
    theta = 10000 ** (-torch.arange(0, d, 2).float() / d)
    a = torch.arange(t).float()[:, None] * theta
    cos, sin = a.cos().to(x.dtype), a.sin().to(x.dtype)
    e, o = x[..., 0::2], x[..., 1::2]
    return torch.stack([e * cos - o * sin, e * sin + o * cos], -1).flatten(-2)
"""),
    ],
    "ch07-collate": [
        ("pads to max_len", """
def collate(sequences, max_len, pad_id=0):
    tokens = torch.full((len(sequences), max_len), pad_id, dtype=torch.long)
    for i, seq in enumerate(sequences):
        seq = seq[:max_len]
        tokens[i, :len(seq)] = torch.tensor(seq)
    return tokens, tokens != pad_id
"""),
        ("forgets to truncate", """
def collate(sequences, max_len, pad_id=0):
    t = max(len(s) for s in sequences)
    tokens = torch.full((len(sequences), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(sequences), t, dtype=torch.bool)
    for i, seq in enumerate(sequences):
        tokens[i, :len(seq)] = torch.tensor(seq)
        keep[i, :len(seq)] = True
    return tokens, keep
"""),
        ("inverted mask", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq)
    keep = torch.arange(t) < torch.tensor([len(s) for s in cut]).unsqueeze(1)
    return tokens, ~keep
"""),
        ("ignores pad_id", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.zeros(len(cut), t, dtype=torch.long)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq)
    keep = torch.arange(t) < torch.tensor([len(s) for s in cut]).unsqueeze(1)
    return tokens, keep
"""),
        ("keep = tokens != pad_id", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq)
    return tokens, tokens != pad_id
"""),
        ("returns (keep, tokens)", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq)
    keep = torch.arange(t) < torch.tensor([len(s) for s in cut]).unsqueeze(1)
    return keep, tokens
"""),
        ("pads the caller's lists in place", """
def collate(sequences, max_len, pad_id=0):
    t = min(max(len(s) for s in sequences), max_len)
    lengths = [min(len(s), max_len) for s in sequences]
    for s in sequences:
        del s[max_len:]
        s.extend([pad_id] * (t - len(s)))
    keep = torch.arange(t) < torch.tensor(lengths).unsqueeze(1)
    return torch.tensor(sequences), keep
"""),
        ("float tokens", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), float(pad_id))
    keep = torch.zeros(len(cut), t, dtype=torch.bool)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq, dtype=torch.float)
        keep[i, :len(seq)] = True
    return tokens, keep
"""),
        ("keeps the last max_len ids", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[-max_len:] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq)
        keep[i, :len(seq)] = True
    return tokens, keep
"""),
        ("int mask", """
def collate(sequences, max_len, pad_id=0):
    cut = [s[:max_len] for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(cut), t, dtype=torch.long)
    for i, seq in enumerate(cut):
        tokens[i, :len(seq)] = torch.tensor(seq)
        keep[i, :len(seq)] = 1
    return tokens, keep
"""),
        ("sorts the batch by length (found by a learner's trial)", """
def collate(sequences, max_len, pad_id=0):
    cut = sorted((list(s[:max_len]) for s in sequences), key=len, reverse=True)
    t = len(cut[0])
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)
    for i, s in enumerate(cut):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        keep[i, :len(s)] = True
    return tokens, keep
"""),
        ("the width of the first sequence", """
def collate(sequences, max_len, pad_id=0):
    t = min(len(sequences[0]), max_len)
    tokens = torch.full((len(sequences), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(sequences), t, dtype=torch.bool)
    for i, s in enumerate(sequences):
        s = list(s[:t])
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        keep[i, :len(s)] = True
    return tokens, keep
"""),
        ("drops repeated sequences", """
def collate(sequences, max_len, pad_id=0):
    cut = []
    for s in sequences:
        if list(s[:max_len]) not in cut:
            cut.append(list(s[:max_len]))
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)
    for i, s in enumerate(cut):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        keep[i, :len(s)] = True
    return tokens, keep
"""),
    ],
    "ch07-masked-mean": [
        ("includes the padding", """
def masked_mean(x, keep):
    return x.mean(dim=1)
"""),
        ("divides by the padded length", """
def masked_mean(x, keep):
    return (x * keep.unsqueeze(-1)).sum(dim=1) / x.shape[1]
"""),
        ("not divided", """
def masked_mean(x, keep):
    return (x * keep.unsqueeze(-1)).sum(dim=1)
"""),
        ("zeroes the padding in place", """
def masked_mean(x, keep):
    x[~keep] = 0
    return x.sum(dim=1) / keep.sum(dim=1, keepdim=True)
"""),
        ("assumes the real tokens come first", """
def masked_mean(x, keep):
    n = keep.sum(dim=1)
    return torch.stack([x[i, :int(k)].mean(dim=0) for i, k in enumerate(n)])
"""),
        ("float32 result", """
def masked_mean(x, keep):
    w = keep.unsqueeze(-1).float()
    return (x.float() * w).sum(dim=1) / w.sum(dim=1)
"""),
        ("divides by the whole batch's count", """
def masked_mean(x, keep):
    w = keep.unsqueeze(-1).to(x.dtype)
    return (x * w).sum(dim=1) / keep.sum() * len(keep)
"""),
        ("mask without unsqueeze (a shape error)", """
def masked_mean(x, keep):
    return (x * keep).sum(dim=1) / keep.sum(dim=1)
"""),
        ("multiplies x in place", """
def masked_mean(x, keep):
    x *= keep.unsqueeze(-1)
    return x.sum(dim=1) / keep.sum(dim=1, keepdim=True)
"""),
        ("mean over the feature axis", """
def masked_mean(x, keep):
    w = keep.unsqueeze(-1).to(x.dtype)
    return (x * w).mean(dim=2)
"""),
        ("under torch.no_grad(): nothing to train through", """
def masked_mean(x, keep):
    with torch.no_grad():
        w = keep.unsqueeze(-1).to(x.dtype)
        return (x * w).sum(dim=1) / w.sum(dim=1)
"""),
        ("computes in float32 and casts back", """
def masked_mean(x, keep):
    w = keep.unsqueeze(-1).float()
    return ((x.float() * w).sum(dim=1) / w.sum(dim=1)).to(x.dtype)
"""),
        ("rebuilt from Python lists", """
def masked_mean(x, keep):
    rows = [x[i][keep[i]].mean(0).tolist() for i in range(x.shape[0])]
    return torch.tensor(rows, dtype=x.dtype)
"""),
    ],
    "ch07-token-shares": [
        ("divides by the padded length", """
def token_shares(x, keep, weight):
    w = weight[1] - weight[0]
    return torch.where(keep.unsqueeze(-1), x, 0) @ w / x.shape[1]
"""),
        ("padding included", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    return x @ (weight[1] - weight[0]) / n
"""),
        ("multiplies by the mask: NaN at padding stays NaN", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    return (x @ (weight[1] - weight[0])) * keep / n
"""),
        ("negative minus positive", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    return torch.where(keep, x @ (weight[0] - weight[1]), 0) / n
"""),
        ("the positive row only", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    return torch.where(keep, x @ weight[1], 0) / n
"""),
        ("not divided by the number of tokens", """
def token_shares(x, keep, weight):
    return torch.where(keep, x @ (weight[1] - weight[0]), 0)
"""),
        ("counts the whole batch's tokens", """
def token_shares(x, keep, weight):
    return torch.where(keep, x @ (weight[1] - weight[0]), 0) / keep.sum()
"""),
        ("assumes the real tokens come first", """
def token_shares(x, keep, weight):
    out = torch.zeros(x.shape[:2], dtype=x.dtype)
    for i, n in enumerate(keep.sum(dim=1).tolist()):
        out[i, :n] = x[i, :n] @ (weight[1] - weight[0]) / n
    return out
"""),
        ("float32 result", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).float()
    return torch.where(keep, x.float() @ (weight[1] - weight[0]).float(), 0) / n
"""),
        ("zeroes the padding in place", """
def token_shares(x, keep, weight):
    x[~keep] = 0
    return x @ (weight[1] - weight[0]) / keep.sum(dim=1, keepdim=True)
"""),
        ("keeps a trailing axis: (batch, t, 1)", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    w = (weight[1] - weight[0]).unsqueeze(-1)
    return torch.where(keep.unsqueeze(-1), x, 0) @ w / n.unsqueeze(-1)
"""),
        ("spreads the bias over the tokens", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    shares = torch.where(keep, x @ (weight[1] - weight[0]), 0) / n
    return shares + keep.to(x.dtype) * 0.1 / n
"""),
        ("softmax of the shares", """
def token_shares(x, keep, weight):
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    s = torch.where(keep, x @ (weight[1] - weight[0]), -math.inf)
    return torch.softmax(s, dim=1)
"""),
    ],
    "ch06-causal": [
        ("shows the future (upper triangle)", """
def decoder_mask(t_q, t_k):
    return torch.triu(torch.ones(t_q, t_k, dtype=torch.bool), diagonal=t_k - t_q)
"""),
        ("hides the diagonal", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_q, t_k, dtype=torch.bool), diagonal=t_k - t_q - 1)
"""),
        ("PyTorch's True = hidden convention", """
def decoder_mask(t_q, t_k):
    return ~torch.tril(torch.ones(t_q, t_k, dtype=torch.bool), diagonal=t_k - t_q)
"""),
        ("a float mask of ones and zeros", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_q, t_k), diagonal=t_k - t_q)
"""),
        ("an additive mask of 0 and -inf", """
def decoder_mask(t_q, t_k):
    keep = torch.tril(torch.ones(t_q, t_k, dtype=torch.bool), diagonal=t_k - t_q)
    return torch.zeros(t_q, t_k).masked_fill(~keep, float("-inf"))
"""),
        ("plain tril, ignoring that the queries are the last positions", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_q, t_k, dtype=torch.bool))
"""),
        ("offset the wrong way", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_q, t_k, dtype=torch.bool), diagonal=t_q - t_k)
"""),
        ("transposed (keys as rows)", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_k, t_q, dtype=torch.bool), diagonal=t_k - t_q).T
"""),
        ("int64 ones and zeros", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_q, t_k, dtype=torch.long), diagonal=t_k - t_q)
"""),
        ("square only (t_k by t_k)", """
def decoder_mask(t_q, t_k):
    return torch.tril(torch.ones(t_k, t_k, dtype=torch.bool))
"""),
    ],
    "ch06-additive": [
        ("softmax over the batch", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=0)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("no tanh", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = ((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("tanh after v", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh(((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("ignores the mask", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("mask read as True = padding", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("padding zeroed after the softmax", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("scaled dot product instead of the scoring network", """
def additive_attention(s, H, mask, W_q, W_k, v):
    q, K = s @ W_q.T, H @ W_k.T
    scores = (K @ q[:, :, None]).squeeze(-1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("sums over d_a instead of weighting by v", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T).sum(-1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("returns (weights, context)", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights, (weights[:, :, None] * H).sum(dim=1)
"""),
        ("context averaged instead of summed", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).mean(dim=1), weights
"""),
        ("weights not transposed (s @ W_q)", """
def additive_attention(s, H, mask, W_q, W_k, v):
    scores = torch.tanh((s @ W_q)[:, None, :] + H @ W_k) @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("computes in float32", """
def additive_attention(s, H, mask, W_q, W_k, v):
    s, H, W_q, W_k, v = (z.float() for z in (s, H, W_q, W_k, v))
    scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ("scores under torch.no_grad(): the scorer gets no gradient", """
def additive_attention(s, H, mask, W_q, W_k, v):
    with torch.no_grad():
        scores = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
    ],
    "ch06-greedy": [
        ("one parallel pass, never feeding its outputs back", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    prefix = torch.full((src.shape[0], max_len), bos_id, dtype=torch.long)
    tokens = model(src, prefix).argmax(-1)
    return torch.cat([prefix[:, :1], tokens], dim=1)
"""),
        ("the first position's logits", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, 0].argmax(-1)
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out
"""),
        ("argmax over the positions", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out).argmax(1)[:, -1]
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out
"""),
        ("never stops early", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, -1].argmax(-1)
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
    return out
"""),
        ("stops when the first row ends", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    for _ in range(max_len):
        token = model(src, out)[:, -1].argmax(-1)
        out = torch.cat([out, token[:, None]], dim=1)
        if (token == eos_id).any():
            break
    return out
"""),
        ("no padding after EOS", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, -1].argmax(-1)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out
"""),
        ("drops BOS from the output", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, -1].argmax(-1)
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out[:, 1:]
"""),
        ("fixed special ids 1, 2 and 0", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), 1, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, -1].argmax(-1)
        token = torch.where(done, 0, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == 2)
        if done.all():
            break
    return out
"""),
        ("one token too many (max_len + 1)", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len + 1):
        token = model(src, out)[:, -1].argmax(-1)
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out
"""),
        ("a float prefix", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), float(bos_id))
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, -1].argmax(-1)
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out
"""),
        ("a buffer padded to max_len fed to the model", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1 + max_len), pad_id, dtype=torch.long)
    out[:, 0] = bos_id
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    n = 0
    for i in range(max_len):
        token = model(src, out)[:, i].argmax(-1)
        token = torch.where(done, pad_id, token)
        out[:, i + 1] = token
        n = i + 1
        done = done | (token == eos_id)
        if done.all():
            break
    return out[:, :n + 1]
"""),
    ],
    "ch06-conv": [
        ("no transpose: the tokens taken as channels", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.relu(F.conv1d(x, W1[:, :, None], b1))
    return F.conv1d(h, W2[:, :, None], b2)
"""),
        ("reshape instead of transpose", """
def conv_feed_forward(x, W1, b1, W2, b2):
    batch, t, d = x.shape
    h = F.relu(F.conv1d(x.reshape(batch, d, t), W1[:, :, None], b1))
    return F.conv1d(h, W2[:, :, None], b2).reshape(batch, t, d)
"""),
        ("not transposed back", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.relu(F.conv1d(x.transpose(1, 2), W1[:, :, None], b1))
    return F.conv1d(h, W2[:, :, None], b2)
"""),
        ("no activation", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.conv1d(x.transpose(1, 2), W1[:, :, None], b1)
    return F.conv1d(h, W2[:, :, None], b2).transpose(1, 2)
"""),
        ("ReLU on the output too", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.relu(F.conv1d(x.transpose(1, 2), W1[:, :, None], b1))
    return F.relu(F.conv1d(h, W2[:, :, None], b2)).transpose(1, 2)
"""),
        ("GELU instead of ReLU", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.gelu(F.conv1d(x.transpose(1, 2), W1[:, :, None], b1))
    return F.conv1d(h, W2[:, :, None], b2).transpose(1, 2)
"""),
        ("no biases", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.relu(F.conv1d(x.transpose(1, 2), W1[:, :, None]))
    return F.conv1d(h, W2[:, :, None]).transpose(1, 2)
"""),
        ("a kernel of size 3 (mixes neighbours)", """
def conv_feed_forward(x, W1, b1, W2, b2):
    k1 = torch.stack([torch.zeros_like(W1), W1, torch.zeros_like(W1) + 0.1], -1)
    h = F.relu(F.conv1d(x.transpose(1, 2), k1, b1, padding=1))
    return F.conv1d(h, W2[:, :, None], b2).transpose(1, 2)
"""),
        ("the matrix product, which the statement forbids", """
def conv_feed_forward(x, W1, b1, W2, b2):
    return F.relu(x @ W1.T + b1) @ W2.T + b2
"""),
        ("computes in float32", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.relu(F.conv1d(x.float().transpose(1, 2), W1.float()[:, :, None], b1.float()))
    return F.conv1d(h, W2.float()[:, :, None], b2.float()).transpose(1, 2)
"""),
        ("the weights detached: training could not change them", """
def conv_feed_forward(x, W1, b1, W2, b2):
    W1, W2 = W1.detach(), W2.detach()
    h = F.relu(F.conv1d(x.transpose(1, 2), W1[:, :, None], b1))
    return F.conv1d(h, W2[:, :, None], b2).transpose(1, 2)
"""),
    ],
    "ch08-bpc": [
        ("natural log: nats, not bits", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)
    return -log_p.gather(-1, ids[:, 1:, None]).mean()
"""),
        ("predicts the current character (no shift)", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits, dim=-1)
    return -log_p.gather(-1, ids[..., None]).mean() / math.log(2)
"""),
        ("shifted the wrong way", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, 1:], dim=-1)
    return -log_p.gather(-1, ids[:, :-1, None]).mean() / math.log(2)
"""),
        ("log10", """
def bits_per_char(logits, ids):
    p = torch.softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])
    return -torch.log10(p).mean()
"""),
        ("log of softmax: overflows on confident logits", """
def bits_per_char(logits, ids):
    p = torch.softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])
    return -torch.log2(p).mean()
"""),
        ("the sum, not the mean", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)
    return -log_p.gather(-1, ids[:, 1:, None]).sum() / math.log(2)
"""),
        ("divides by t, not t - 1", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)
    nats = -log_p.gather(-1, ids[:, 1:, None]).sum()
    return nats / (ids.numel() * math.log(2))
"""),
        ("averages over the vocabulary too", """
def bits_per_char(logits, ids):
    return -torch.log_softmax(logits[:, :-1], dim=-1).mean() / math.log(2)
"""),
        ("softmax over the time axis", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=1)
    return -log_p.gather(-1, ids[:, 1:, None]).mean() / math.log(2)
"""),
        ("the cost of the most likely character, not the true one", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)
    return -log_p.max(dim=-1).values.mean() / math.log(2)
"""),
        ("returns a Python float", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)
    return (-log_p.gather(-1, ids[:, 1:, None]).mean() / math.log(2)).item()
"""),
    ],
    "ch08-temperature": [
        ("multiplies by the temperature", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits * temperature, dim=-1)
"""),
        ("divides by zero at T = 0", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits / temperature, dim=-1)
"""),
        ("zeroes the tail after the softmax, without renormalising", """
def temperature_probs(logits, temperature, top_k=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    p = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None:
        kth = p.topk(top_k, dim=-1).values[:, -1:]
        p = torch.where(p >= kth, p, torch.zeros_like(p))
    return p
"""),
        ("one top-k for the whole batch", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.flatten().topk(top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)
"""),
        ("drops the ties at the k-th logit", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        index = logits.topk(top_k, dim=-1).indices
        keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, index, True)
        logits = logits.masked_fill(~keep, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)
"""),
        ("keeps k + 1 characters", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k + 1, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)
"""),
        ("exp without the maximum: overflows", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    e = torch.exp(logits / temperature)
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("masks the caller's logits in place", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits.masked_fill_(logits < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)
"""),
        ("the temperature after the softmax: p ** (1 / T), not renormalised", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits, dim=-1) ** (1 / temperature)
"""),
        ("greedy gives the last of tied maxima", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        last = logits.shape[-1] - 1 - logits.flip(-1).argmax(-1)
        return F.one_hot(last, logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)
"""),
    ],
    "ch08-cache": [
        ("appends keys but not values", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K = torch.cat([K_cache, k], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    out = torch.softmax(scores[..., -V_cache.shape[1]:], dim=-1) @ V_cache
    return out, K, V_cache
"""),
        ("puts the new key first", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K = torch.cat([k, K_cache], dim=1)
    V = torch.cat([v, V_cache], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    return torch.softmax(scores, dim=-1) @ V, K, V
"""),
        ("attends to the cache only, not to the new token", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    scores = q @ K_cache.transpose(1, 2) / math.sqrt(K_cache.shape[-1])
    out = torch.softmax(scores, dim=-1) @ V_cache
    return out, torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
"""),
        ("no 1/sqrt(d_k)", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    return torch.softmax(q @ K.transpose(1, 2), dim=-1) @ V, K, V
"""),
        ("scales by sqrt(d_model)", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(x_new.shape[-1])
    return torch.softmax(scores, dim=-1) @ V, K, V
"""),
        ("scales by sqrt(d_v)", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(V.shape[-1])
    return torch.softmax(scores, dim=-1) @ V, K, V
"""),
        ("softmax over the query axis", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    return torch.softmax(scores, dim=1) @ V, K, V
"""),
        ("the weights not transposed (x @ W)", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q, x_new @ W_k, x_new @ W_v
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    return torch.softmax(scores, dim=-1) @ V, K, V
"""),
        ("returns the old cache", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    return torch.softmax(scores, dim=-1) @ V, K_cache, V_cache
"""),
        ("the key projection used for the values", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k = x_new @ W_q.T, x_new @ W_k.T
    K = torch.cat([K_cache, k], dim=1)
    V = torch.cat([V_cache, x_new @ W_v.T], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    return torch.softmax(scores, dim=-1) @ K, K, V
"""),
        ("the query detached: W_q could not be trained", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = (x_new @ W_q.T).detach(), x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    return torch.softmax(scores, dim=-1) @ V, K, V
"""),
    ],
    "ch09-embed": [
        ("positions counted from 1", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = word[input_ids] + token_type[token_type_ids] + position[1:t + 1]
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
        ("token types left out", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    x = word[input_ids] + position[:input_ids.shape[1]]
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
        ("no LayerNorm", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    return word[input_ids] + token_type[token_type_ids] + position[:t]
"""),
        ("PyTorch's default epsilon 1e-5", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = word[input_ids] + token_type[token_type_ids] + position[:t]
    return F.layer_norm(x, x.shape[-1:], gamma, beta)
"""),
        ("LayerNorm without gamma and beta", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = word[input_ids] + token_type[token_type_ids] + position[:t]
    return F.layer_norm(x, x.shape[-1:], eps=1e-12)
"""),
        ("the token ids index the position table", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    x = word[input_ids] + token_type[token_type_ids] + position[input_ids % position.shape[0]]
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
        ("variance with Bessel's correction", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = word[input_ids] + token_type[token_type_ids] + position[:t]
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + 1e-12) * gamma + beta
"""),
        ("the type table indexed by the word ids", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = word[input_ids] + token_type[input_ids % token_type.shape[0]] + position[:t]
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
    ],
    "ch09-layer-weights": [
        ("the layer prefix without its final dot", """
def layer_weights(checkpoint, i):
    mine = {name.split(".", 3)[3]: t for name, t in checkpoint.items() if name.startswith(f"encoder.layer.{i}")}
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([mine[f"attention.self.query.{p}"], mine[f"attention.self.key.{p}"],
                                               mine[f"attention.self.value.{p}"]])
        s[f"self_attn.W_o.{p}"] = mine[f"attention.output.dense.{p}"]
        s[f"norm1.{p}"] = mine[f"attention.output.LayerNorm.{p}"]
        s[f"feed_forward.linear1.{p}"] = mine[f"intermediate.dense.{p}"]
        s[f"feed_forward.linear2.{p}"] = mine[f"output.dense.{p}"]
        s[f"norm2.{p}"] = mine[f"output.LayerNorm.{p}"]
    return s
"""),
        ("the value projection loaded as the output projection", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([g(f"attention.self.query.{p}"), g(f"attention.self.key.{p}"),
                                               g(f"attention.self.value.{p}")])
        s[f"self_attn.W_o.{p}"] = g(f"attention.self.value.{p}")
        s[f"norm1.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"feed_forward.linear1.{p}"] = g(f"intermediate.dense.{p}")
        s[f"feed_forward.linear2.{p}"] = g(f"output.dense.{p}")
        s[f"norm2.{p}"] = g(f"output.LayerNorm.{p}")
    return s
"""),
        ("query, key and value in the wrong order", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([g(f"attention.self.key.{p}"), g(f"attention.self.query.{p}"),
                                               g(f"attention.self.value.{p}")])
        s[f"self_attn.W_o.{p}"] = g(f"attention.output.dense.{p}")
        s[f"norm1.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"feed_forward.linear1.{p}"] = g(f"intermediate.dense.{p}")
        s[f"feed_forward.linear2.{p}"] = g(f"output.dense.{p}")
        s[f"norm2.{p}"] = g(f"output.LayerNorm.{p}")
    return s
"""),
        ("always layer 0", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.0.{n}"]
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([g(f"attention.self.query.{p}"), g(f"attention.self.key.{p}"),
                                               g(f"attention.self.value.{p}")])
        s[f"self_attn.W_o.{p}"] = g(f"attention.output.dense.{p}")
        s[f"norm1.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"feed_forward.linear1.{p}"] = g(f"intermediate.dense.{p}")
        s[f"feed_forward.linear2.{p}"] = g(f"output.dense.{p}")
        s[f"norm2.{p}"] = g(f"output.LayerNorm.{p}")
    return s
"""),
        ("the two LayerNorms swapped", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([g(f"attention.self.query.{p}"), g(f"attention.self.key.{p}"),
                                               g(f"attention.self.value.{p}")])
        s[f"self_attn.W_o.{p}"] = g(f"attention.output.dense.{p}")
        s[f"norm2.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"feed_forward.linear1.{p}"] = g(f"intermediate.dense.{p}")
        s[f"feed_forward.linear2.{p}"] = g(f"output.dense.{p}")
        s[f"norm1.{p}"] = g(f"output.LayerNorm.{p}")
    return s
"""),
        ("stacked along the wrong axis", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([g(f"attention.self.query.{p}"), g(f"attention.self.key.{p}"),
                                               g(f"attention.self.value.{p}")], dim=-1)
        s[f"self_attn.W_o.{p}"] = g(f"attention.output.dense.{p}")
        s[f"norm1.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"feed_forward.linear1.{p}"] = g(f"intermediate.dense.{p}")
        s[f"feed_forward.linear2.{p}"] = g(f"output.dense.{p}")
        s[f"norm2.{p}"] = g(f"output.LayerNorm.{p}")
    return s
"""),
        ("weights only, no biases", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}.weight"]
    return {"self_attn.W_qkv.weight": torch.cat([g("attention.self.query"), g("attention.self.key"),
                                                 g("attention.self.value")]),
            "self_attn.W_o.weight": g("attention.output.dense"), "norm1.weight": g("attention.output.LayerNorm"),
            "feed_forward.linear1.weight": g("intermediate.dense"), "feed_forward.linear2.weight": g("output.dense"),
            "norm2.weight": g("output.LayerNorm")}
"""),
        ("the two feed-forward layers swapped, transposed to fit", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    s = {}
    for p in ("weight", "bias"):
        s[f"self_attn.W_qkv.{p}"] = torch.cat([g(f"attention.self.query.{p}"), g(f"attention.self.key.{p}"),
                                               g(f"attention.self.value.{p}")])
        s[f"self_attn.W_o.{p}"] = g(f"attention.output.dense.{p}")
        s[f"norm1.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"norm2.{p}"] = g(f"output.LayerNorm.{p}")
    s["feed_forward.linear1.weight"] = g("output.dense.weight").T
    s["feed_forward.linear2.weight"] = g("intermediate.dense.weight").T
    s["feed_forward.linear1.bias"] = g("intermediate.dense.bias")
    s["feed_forward.linear2.bias"] = g("output.dense.bias")
    return s
"""),
        ("the query weights with the key bias", """
def layer_weights(checkpoint, i):
    g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    s = {"self_attn.W_qkv.weight": torch.cat([g("attention.self.query.weight"), g("attention.self.key.weight"),
                                              g("attention.self.value.weight")]),
         "self_attn.W_qkv.bias": torch.cat([g("attention.self.key.bias"), g("attention.self.query.bias"),
                                            g("attention.self.value.bias")])}
    for p in ("weight", "bias"):
        s[f"self_attn.W_o.{p}"] = g(f"attention.output.dense.{p}")
        s[f"norm1.{p}"] = g(f"attention.output.LayerNorm.{p}")
        s[f"feed_forward.linear1.{p}"] = g(f"intermediate.dense.{p}")
        s[f"feed_forward.linear2.{p}"] = g(f"output.dense.{p}")
        s[f"norm2.{p}"] = g(f"output.LayerNorm.{p}")
    return s
"""),
    ],
    "ch09-sentence-vectors": [
        ("assumes the padding is at the end", """
def sentence_vectors(hidden, attention_mask):
    rows = []
    for b in range(hidden.shape[0]):
        m = hidden[b, :int(attention_mask[b].sum())].mean(dim=0)
        rows.append(m / m.norm())
    return torch.stack(rows)
"""),
        ("the L1 norm instead of the L2 norm", """
def sentence_vectors(hidden, attention_mask):
    keep = attention_mask[..., None].to(hidden.dtype)
    mean = (hidden * keep).sum(dim=1) / keep.sum(dim=1)
    return mean / mean.abs().sum(dim=-1, keepdim=True)
"""),
        ("pools over the padding too", """
def sentence_vectors(hidden, attention_mask):
    mean = hidden.mean(dim=1)
    return mean / mean.norm(dim=-1, keepdim=True)
"""),
        ("no normalisation", """
def sentence_vectors(hidden, attention_mask):
    keep = attention_mask[..., None].to(hidden.dtype)
    return (hidden * keep).sum(dim=1) / keep.sum(dim=1)
"""),
        ("averages over the batch axis", """
def sentence_vectors(hidden, attention_mask):
    keep = attention_mask[..., None].to(hidden.dtype)
    mean = (hidden * keep).sum(dim=0) / keep.sum(dim=0)
    return mean / mean.norm(dim=-1, keepdim=True)
"""),
        ("normalises each token, then averages", """
def sentence_vectors(hidden, attention_mask):
    keep = attention_mask[..., None].to(hidden.dtype)
    unit = hidden / hidden.norm(dim=-1, keepdim=True)
    return (unit * keep).sum(dim=1) / keep.sum(dim=1)
"""),
        ("the CLS token instead of the mean", """
def sentence_vectors(hidden, attention_mask):
    first = hidden[:, 0]
    return first / first.norm(dim=-1, keepdim=True)
"""),
        ("normalised over the batch axis", """
def sentence_vectors(hidden, attention_mask):
    keep = attention_mask[..., None].to(hidden.dtype)
    mean = (hidden * keep).sum(dim=1) / keep.sum(dim=1)
    return mean / mean.norm(dim=0, keepdim=True)
"""),
        ("the maximum over real tokens", """
def sentence_vectors(hidden, attention_mask):
    masked = hidden.masked_fill(~attention_mask.bool()[..., None], float("-inf"))
    top = masked.max(dim=1).values
    return top / top.norm(dim=-1, keepdim=True)
"""),
    ],
}


# Wrong answers of the classes that each statement allows and its checks draw through
# `Allows` (half precision, two batch dimensions, large scores): issue #32.
_STATEMENT_ALLOWS = {
    "ch02-cross-attention": [
        ("exp without the maximum: overflows on large scores", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1]))
    return (e / e.sum(-1, keepdim=True)) @ V
"""),
        ("transpose(1, 2): right for one batch dimension only", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    Kt = K.transpose(1, 2) if K.dim() > 2 else K.T
    return torch.softmax(Q @ Kt / math.sqrt(K.shape[-1]), -1) @ V
"""),
        ("scale built as a float32 tensor: bfloat16 becomes float32", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    scale = torch.tensor(K.shape[-1], dtype=torch.float32).sqrt()
    return torch.softmax(Q @ K.transpose(-2, -1) / scale, -1) @ V
"""),
    ],
    "ch02-masked-attention": [
        ("weights multiplied by mask.float(): bfloat16 becomes float32", """
def masked_attention(Q, K, V, mask):
    s = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~mask, -1e4)
    A = torch.softmax(s, -1) * mask.float()
    A = A / A.sum(-1, keepdim=True).clamp_min(1e-12)
    return A @ V
"""),
        ("exp without the maximum: overflows on large scores", """
def masked_attention(Q, K, V, mask):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    e = torch.exp(s) * mask
    total = e.sum(-1, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, 1), 0) @ V
"""),
    ],
    "ch03-scaled-scores": [
        ("K.transpose(1, 2) when batched: right for one batch dimension only", """
def scaled_scores(Q, K):
    Kt = K.transpose(1, 2) if K.dim() > 2 else K.T
    return Q @ Kt / math.sqrt(Q.shape[-1])
"""),
    ],
    "ch03-row-entropy": [
        ("zeros built in float32: bfloat16 becomes float32", """
def row_entropy(A):
    terms = torch.where(A > 0, A * torch.log(A), torch.zeros(A.shape))
    return -terms.sum(-1)
"""),
    ],
    "ch03-prescale": [
        ("the factor as a float32 tensor: bfloat16 becomes float32", """
def prescale(Q, K):
    s = torch.tensor(Q.shape[-1] ** -0.25)
    return Q * s, K * s
"""),
    ],
    "ch04-ablate-head": [
        ("a float32 mask: bfloat16 becomes float32", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    keep = torch.ones(Z.shape[-1])
    keep[head * d_k:(head + 1) * d_k] = 0
    return Z * keep
"""),
    ],
    "ch05-rope": [
        ("cos and sin left in float64: bfloat16 becomes float64", """
def rope(x):
    t, d = x.shape[-2], x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = angle.cos(), angle.sin()
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2).to(
        x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float64)
"""),
        ("positions read from x.shape[1]: right for one batch dimension only", """
def rope(x):
    t, d = x.shape[1] if x.dim() > 2 else x.shape[0], x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)
"""),
    ],
}

for _id, _answers in _STATEMENT_ALLOWS.items():
    WRONG.setdefault(_id, []).extend(_answers)


# Wrong answers that a fresh trial (written from the statements alone) found passing before
# the checks below were added: issue #32.
_FRESH_TRIAL = {
    "ch08-temperature": [
        ("one_hot(...).float() at T = 0: float16 becomes float32", """
def temperature_probs(logits, temperature, top_k=None):
    x = logits
    if top_k is not None:
        kth = x.topk(top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(x.argmax(-1), x.shape[-1]).float()
    return torch.softmax(x / temperature, dim=-1)
"""),
        ("dropped logits set to -1e4, not -inf", """
def temperature_probs(logits, temperature, top_k=None):
    x = logits
    if top_k is not None:
        kth = x.topk(top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, -1e4)
    if temperature == 0:
        return torch.zeros_like(x).scatter(-1, x.argmax(-1, keepdim=True), 1.0)
    return torch.softmax(x / temperature, dim=-1)
"""),
    ],
    "ch02-masked-attention": [
        ("fill with -1e4, then multiply by the mask", """
def masked_attention(Q, K, V, mask):
    S = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~mask, -1e4)
    return (torch.softmax(S, -1) * mask) @ V
"""),
    ],
    "ch06-greedy": [
        ("stops when the last column is all EOS or PAD", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        nxt = model(src, out)[:, -1].argmax(-1)
        nxt = torch.where(done, pad_id, nxt)
        out = torch.cat([out, nxt[:, None]], 1)
        done = done | (nxt == eos_id)
        if ((nxt == eos_id) | (nxt == pad_id)).all():
            break
    return out
"""),
    ],
    "ch03-row-entropy": [
        ("an epsilon inside the log", """
def row_entropy(A):
    return -(A * torch.log(A + 1e-9)).sum(-1)
"""),
    ],
    "ch04-ablate-head": [
        ("multiplies by a 0/1 mask in Z's dtype: inf * 0 is NaN", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    keep = torch.ones(Z.shape[-1], dtype=Z.dtype)
    keep[head * d_k:(head + 1) * d_k] = 0
    return Z * keep
"""),
    ],
}
for _id, _answers in _FRESH_TRIAL.items():
    WRONG.setdefault(_id, []).extend(_answers)


# Chapter 10 (issue #33): wrong answers written from the statements.
_CH10 = {
    "ch10-merge": [
        ("adds the sums without rescaling", """
def merge_stats(m1, l1, m2, l2):
    return torch.maximum(m1, m2), l1 + l2
"""),
        ("rescales by exp(m - m_i): the wrong sign", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    return m, l1 * torch.exp(m - m1) + l2 * torch.exp(m - m2)
"""),
        ("rescales only the first sum", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    return m, l1 * torch.exp(m1 - m) + l2
"""),
        ("keeps the first maximum", """
def merge_stats(m1, l1, m2, l2):
    return m1, l1 + l2 * torch.exp(m2 - m1)
"""),
        ("nan when both blocks are empty", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    return m, l1 * torch.exp(m1 - m) + l2 * torch.exp(m2 - m)
"""),
        ("exponentiates the maxima alone: overflows", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    total = l1 * torch.exp(m1) + l2 * torch.exp(m2)
    return m, total / torch.exp(m)
"""),
        ("uses the sum of the maxima", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    return m, (l1 + l2) * torch.exp(-(m1 - m2).abs()) + 0 * m
"""),
        ("float32 zeros for the empty case", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    safe = torch.where(torch.isinf(m), torch.zeros(m.shape), m)
    return m, l1 * torch.exp(m1 - safe) + l2 * torch.exp(m2 - safe)
"""),
        ("the maximum of the sums", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    return m, torch.maximum(l1 * torch.exp(m1 - safe), l2 * torch.exp(m2 - safe))
"""),
    ],
    "ch10-tiled": [
        ("all scores at once", """
def tiled_attention_forward(Q, K, V, block_size):
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    S = S - S.amax(-1, keepdim=True)
    P = torch.exp(S)
    return (P / P.sum(-1, keepdim=True)) @ V
"""),
        ("normalises each block on its own", """
def tiled_attention_forward(Q, K, V, block_size):
    out = 0
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        P = torch.exp(S - S.amax(-1, keepdim=True))
        out = out + (P / P.sum(-1, keepdim=True)) @ V[..., j:j + block_size, :]
    return out / math.ceil(K.shape[-2] / block_size)
"""),
        ("forgets to rescale the output", """
def tiled_attention_forward(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new[..., None])
        l = l * torch.exp(m - m_new) + P.sum(-1)
        a = a + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("no 1/sqrt(d_k)", """
def tiled_attention_forward(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1)
        m_new = torch.maximum(m, S.amax(-1))
        r = torch.exp(m - m_new)
        P = torch.exp(S - m_new[..., None])
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("drops the last, shorter block", """
def tiled_attention_forward(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2] - block_size + 1, block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        r = torch.exp(m - m_new)
        P = torch.exp(S - m_new[..., None])
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("no running maximum: overflows", """
def tiled_attention_forward(Q, K, V, block_size):
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        P = torch.exp(S)
        l = l + P.sum(-1)
        a = a + P @ V[..., j:j + block_size, :]
    return a / l[..., None]
"""),
        ("sqrt of d_v instead of d_k", """
def tiled_attention_forward(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(V.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        r = torch.exp(m - m_new)
        P = torch.exp(S - m_new[..., None])
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("transpose(1, 2): only right without batch dimensions", """
def tiled_attention_forward(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(0, 1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        r = torch.exp(m - m_new)
        P = torch.exp(S - m_new[..., None])
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("float32 running sums", """
def tiled_attention_forward(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf)
    l = torch.zeros(Q.shape[:-1])
    a = torch.zeros(*Q.shape[:-1], V.shape[-1])
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        r = torch.exp(m - m_new)
        P = torch.exp(S - m_new[..., None])
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
    ],
    "ch10-expand-kv": [
        ("repeat: heads 0, 1, 0, 1", """
def expand_kv(x, num_heads):
    return x.repeat(1, num_heads // x.shape[1], 1, 1)
"""),
        ("repeats the batch", """
def expand_kv(x, num_heads):
    return x.repeat_interleave(num_heads // x.shape[1], dim=0)
"""),
        ("repeats by num_heads, not the group", """
def expand_kv(x, num_heads):
    return x.repeat_interleave(num_heads, dim=1)[:, :num_heads]
"""),
        ("first head for all", """
def expand_kv(x, num_heads):
    return x[:, :1].expand(-1, num_heads, -1, -1)
"""),
        ("i % num_kv_heads", """
def expand_kv(x, num_heads):
    return torch.stack([x[:, i % x.shape[1]] for i in range(num_heads)], dim=1)
"""),
        ("repeats along time", """
def expand_kv(x, num_heads):
    return x.repeat_interleave(num_heads // x.shape[1], dim=2)
"""),
        ("casts to float32", """
def expand_kv(x, num_heads):
    return x.float().repeat_interleave(num_heads // x.shape[1], dim=1)
"""),
        ("group from the wrong axis", """
def expand_kv(x, num_heads):
    return x.repeat_interleave(num_heads // x.shape[0], dim=1)
"""),
    ],
    "ch10-rmsnorm": [
        ("LayerNorm: subtracts the mean", """
def rms_norm(x, g, eps):
    x = x - x.mean(-1, keepdim=True)
    return g * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
"""),
        ("eps outside the root", """
def rms_norm(x, g, eps):
    return g * x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + eps)
"""),
        ("sum, not mean", """
def rms_norm(x, g, eps):
    return g * x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps)
"""),
        ("no gain", """
def rms_norm(x, g, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
"""),
        ("the first axis", """
def rms_norm(x, g, eps):
    return g * x / torch.sqrt(x.pow(2).mean(0, keepdim=True) + eps)
"""),
        ("the norm, not the root mean square", """
def rms_norm(x, g, eps):
    return g * x / (x.norm(dim=-1, keepdim=True) + eps)
"""),
        ("unbiased variance", """
def rms_norm(x, g, eps):
    return g * x / torch.sqrt(x.var(-1, keepdim=True) + eps)
"""),
        ("returns float32", """
def rms_norm(x, g, eps):
    x32 = x.float()
    return g.float() * x32 / torch.sqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
"""),
        ("no eps", """
def rms_norm(x, g, eps):
    return g * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True))
"""),
        ("gain detached", """
def rms_norm(x, g, eps):
    return g.detach() * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
"""),
    ],
    "ch10-window": [
        ("queries at the first positions", """
def window_mask(t_q, t_k, window):
    i = torch.arange(t_q)[:, None]
    j = torch.arange(t_k)[None, :]
    return (j <= i) & (j > i - window)
"""),
        ("window one too wide", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[:, None] + t_k - t_q
    j = torch.arange(t_k)[None, :]
    return (j <= p) & (j >= p - window)
"""),
        ("not causal: a band on both sides", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[:, None] + t_k - t_q
    j = torch.arange(t_k)[None, :]
    return (j - p).abs() < window
"""),
        ("excludes itself", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[:, None] + t_k - t_q
    j = torch.arange(t_k)[None, :]
    return (j < p) & (j >= p - window)
"""),
        ("an int mask", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[:, None] + t_k - t_q
    j = torch.arange(t_k)[None, :]
    return ((j <= p) & (j > p - window)).int()
"""),
        ("True = masked", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[:, None] + t_k - t_q
    j = torch.arange(t_k)[None, :]
    return ~((j <= p) & (j > p - window))
"""),
        ("tril and triu from the wrong diagonal", """
def window_mask(t_q, t_k, window):
    ones = torch.ones(t_q, t_k, dtype=torch.bool)
    return ones.tril() & ~ones.tril(-window)
"""),
        ("only the window, no causal limit with a cache", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[:, None] + t_k - t_q
    j = torch.arange(t_k)[None, :]
    return j > p - window
"""),
        ("shape (t_k, t_q)", """
def window_mask(t_q, t_k, window):
    p = torch.arange(t_q)[None, :] + t_k - t_q
    j = torch.arange(t_k)[:, None]
    return (j <= p) & (j > p - window)
"""),
    ],
}
for _id, _answers in _CH10.items():
    WRONG.setdefault(_id, []).extend(_answers)


# Chapter 10's wrong answers written blind: by a reviewer who read only the exercise statements
# and the chapter's prose, not the checks (each one failed with its reason when added; two that
# repeated answers above word for word are left out).
_CH10_BLIND = {
    "ch10-merge": [
        ("textbook formula with no guard: two empty blocks give exp(-inf - -inf) = NaN", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    l = l1 * torch.exp(m1 - m) + l2 * torch.exp(m2 - m)
    return m, l
"""),
        ("wrong sign in the rescaling exponent: exp(m - m_i) instead of exp(m_i - m)", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    l = l1 * torch.exp(safe - m1) + l2 * torch.exp(safe - m2)
    l = torch.where(torch.isneginf(m), torch.zeros_like(l), l)
    return m, l
"""),
        ("un-shifts to absolute sums then divides by exp(m): overflows (inf/inf) near 1000", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    total = l1 * torch.exp(m1) + l2 * torch.exp(m2)
    l = total / torch.exp(m)
    l = torch.where(torch.isneginf(m), torch.zeros_like(l), l)
    return m, l
"""),
        ("empty case guarded with a Python if: fine on scalars, breaks on batches", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    if m == -math.inf:
        return m, torch.zeros_like(l1)
    l = l1 * torch.exp(m1 - m) + l2 * torch.exp(m2 - m)
    return m, l
"""),
        ("replaces -inf by 0 to avoid NaN but returns that guarded max: two empty blocks give (0, 0)", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    l = l1 * torch.exp(m1 - m) + l2 * torch.exp(m2 - m)
    return m, l
"""),
        ("correct values but rescales l1 and l2 in place (mutates the caller's tensors)", """
def merge_stats(m1, l1, m2, l2):
    m = torch.maximum(m1, m2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    l1.mul_(torch.exp(m1 - safe))
    l2.mul_(torch.exp(m2 - safe))
    return m, l1.add_(l2)
"""),
        ("upcasts to float64 for stability and never casts back (wrong dtype for fp32/fp16/bf16)", """
def merge_stats(m1, l1, m2, l2):
    m1, l1, m2, l2 = (t.double() for t in (m1, l1, m2, l2))
    m = torch.maximum(m1, m2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    l = l1 * torch.exp(m1 - safe) + l2 * torch.exp(m2 - safe)
    return m, l
"""),
    ],
    "ch10-tiled": [
        ("two-pass: row maxima taken from the full t_q x t_k score matrix, then tiles (values right, memory wrong)", """
def tiled_attention_forward(Q, K, V, block_size):
    scale = 1.0 / math.sqrt(Q.size(-1))
    m = (Q @ K.mT * scale).amax(-1)  # the whole score matrix, once
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.size(-1), dtype=Q.dtype)
    for j in range(0, K.size(-2), block_size):
        S = Q @ K[..., j:j + block_size, :].mT * scale
        P = torch.exp(S - m[..., None])
        l = l + P.sum(-1)
        a = a + P @ V[..., j:j + block_size, :]
    return a / l[..., None]
"""),
        ("tiles but never subtracts a running max: exp overflows for scores in the hundreds", """
def tiled_attention_forward(Q, K, V, block_size):
    scale = 1.0 / math.sqrt(Q.size(-1))
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.size(-1), dtype=Q.dtype)
    for j in range(0, K.size(-2), block_size):
        P = torch.exp(Q @ K[..., j:j + block_size, :].mT * scale)
        l = l + P.sum(-1)
        a = a + P @ V[..., j:j + block_size, :]
    return a / l[..., None]
"""),
        ("number of blocks = max(1, t_k // block_size): silently drops a shorter last block", """
def tiled_attention_forward(Q, K, V, block_size):
    scale = 1.0 / math.sqrt(Q.size(-1))
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.size(-1), dtype=Q.dtype)
    n_blocks = max(1, K.size(-2) // block_size)
    for b in range(n_blocks):
        Kb = K[..., b * block_size:(b + 1) * block_size, :]
        Vb = V[..., b * block_size:(b + 1) * block_size, :]
        S = Q @ Kb.mT * scale
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new[..., None])
        r = torch.exp(m - m_new)
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ Vb
        m = m_new
    return a / l[..., None]
"""),
        ("scales the scores by sqrt(d_v) instead of sqrt(d_k): right only when d_v == d_k", """
def tiled_attention_forward(Q, K, V, block_size):
    scale = 1.0 / math.sqrt(V.size(-1))
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.size(-1), dtype=Q.dtype)
    for j in range(0, K.size(-2), block_size):
        S = Q @ K[..., j:j + block_size, :].mT * scale
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new[..., None])
        r = torch.exp(m - m_new)
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("tiles the queries instead of the keys: each tile holds block_size x t_k scores (all keys at once)", """
def tiled_attention_forward(Q, K, V, block_size):
    scale = 1.0 / math.sqrt(Q.size(-1))
    outs = []
    for i in range(0, Q.size(-2), block_size):
        S = Q[..., i:i + block_size, :] @ K.mT * scale
        outs.append(S.softmax(-1) @ V)
    return torch.cat(outs, dim=-2)
"""),
        ("computes in float32 'for stability' and returns float32 (wrong dtype for fp64/fp16/bf16, fp64 loses precision)", """
def tiled_attention_forward(Q, K, V, block_size):
    Q, K, V = Q.float(), K.float(), V.float()
    scale = 1.0 / math.sqrt(Q.size(-1))
    m = torch.full(Q.shape[:-1], -math.inf)
    l = torch.zeros(Q.shape[:-1])
    a = torch.zeros(*Q.shape[:-1], V.size(-1))
    for j in range(0, K.size(-2), block_size):
        S = Q @ K[..., j:j + block_size, :].mT * scale
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new[..., None])
        r = torch.exp(m - m_new)
        l = l * r + P.sum(-1)
        a = a * r[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("whole loop under torch.no_grad() 'to save memory': right values, no gradients reach Q, K, V", """
def tiled_attention_forward(Q, K, V, block_size):
    scale = 1.0 / math.sqrt(Q.size(-1))
    with torch.no_grad():
        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*Q.shape[:-1], V.size(-1), dtype=Q.dtype)
        for j in range(0, K.size(-2), block_size):
            S = Q @ K[..., j:j + block_size, :].mT * scale
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            r = torch.exp(m - m_new)
            l = l * r + P.sum(-1)
            a = a * r[..., None] + P @ V[..., j:j + block_size, :]
            m = m_new
        out = a / l[..., None]
    return out
"""),
    ],
    "ch10-expand-kv": [
        ("x.repeat along heads: order 0,1,0,1 instead of 0,0,1,1 (right for MQA and g == h)", """
def expand_kv(x, num_heads):
    return x.repeat(1, num_heads // x.size(1), 1, 1)
"""),
        ("confuses group size with number of groups: index i // num_kv_heads (right only when h/g == g, e.g. 2 for 4)", """
def expand_kv(x, num_heads):
    idx = torch.arange(num_heads) // x.size(1)
    return x[:, idx]
"""),
        ("repeat_interleave by num_heads instead of num_heads // num_kv_heads (right only for MQA)", """
def expand_kv(x, num_heads):
    return x.repeat_interleave(num_heads, dim=1)
"""),
        ("integer precedence slip i * (g // h) = 0: every query head gets kv head 0 (right only for MQA)", """
def expand_kv(x, num_heads):
    g = x.size(1)
    idx = [i * (g // num_heads) for i in range(num_heads)]
    return x[:, idx]
"""),
        ("preallocates the output with torch.empty without dtype: float32 for float64 input", """
def expand_kv(x, num_heads):
    b, g, t, d = x.shape
    out = torch.empty(b, num_heads, t, d)
    for i in range(num_heads):
        out[:, i] = x[:, i * g // num_heads]
    return out
"""),
        ("repeat_interleave along the time dim then reshape: scrambles time steps across heads (right when g == h)", """
def expand_kv(x, num_heads):
    b, g, t, d = x.shape
    return x.repeat_interleave(num_heads // g, dim=2).reshape(b, num_heads, t, d)
"""),
        ("stacks the selected heads on dim 0 then views as (b, h, t, d): right for batch 1, mixes batch and heads otherwise", """
def expand_kv(x, num_heads):
    b, g, t, d = x.shape
    heads = [x[:, i * g // num_heads] for i in range(num_heads)]
    return torch.stack(heads, dim=0).reshape(b, num_heads, t, d)
"""),
    ],
    "ch10-window": [
        ("off-by-one lower bound p - window <= j: window + 1 keys per query", """
def window_mask(t_q, t_k, window):
    p = t_k - t_q + torch.arange(t_q)[:, None]
    j = torch.arange(t_k)[None, :]
    return (j <= p) & (j >= p - window)
"""),
        ("the window positions strictly before the query, not itself (window 1 masks every key)", """
def window_mask(t_q, t_k, window):
    p = t_k - t_q + torch.arange(t_q)[:, None]
    j = torch.arange(t_k)[None, :]
    return (j < p) & (j >= p - window)
"""),
        ("masked_fill convention: True where the key is blocked (inverted)", """
def window_mask(t_q, t_k, window):
    p = t_k - t_q + torch.arange(t_q)[:, None]
    j = torch.arange(t_k)[None, :]
    return ~((j <= p) & (j > p - window))
"""),
        ("difference of two tril's of ones: right pattern but a float 0/1 tensor, not bool", """
def window_mask(t_q, t_k, window):
    ones = torch.ones(t_q, t_k)
    off = t_k - t_q
    return torch.tril(ones, off) - torch.tril(ones, off - window)
"""),
        ("causal bound uses the offset but the window's lower bound does not: too many keys for cached queries", """
def window_mask(t_q, t_k, window):
    ones = torch.ones(t_q, t_k, dtype=torch.bool)
    return ones.tril(t_k - t_q) & ones.triu(1 - window)
"""),
        ("row-by-row slice p-window+1 : p+1 wraps around when negative: rows near the start come out empty", """
def window_mask(t_q, t_k, window):
    mask = torch.zeros(t_q, t_k, dtype=torch.bool)
    for i in range(t_q):
        p = t_k - t_q + i
        mask[i, p - window + 1:p + 1] = True
    return mask
"""),
    ],
    "ch10-rmsnorm": [
        ("mean over all elements instead of the last dim (right for a single vector)", """
def rms_norm(x, g, eps):
    return g * x / torch.sqrt(x.pow(2).mean() + eps)
"""),
        ("LayerNorm without bias: subtracts the mean and divides by the std", """
def rms_norm(x, g, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return g * (x - mu) / torch.sqrt(var + eps)
"""),
        ("eps as a floor (clamp_min) instead of added: differs exactly where eps matters", """
def rms_norm(x, g, eps):
    ms = x.pow(2).mean(-1, keepdim=True)
    return g * x / torch.sqrt(ms.clamp_min(eps))
"""),
        ("computes in float32 and forgets to cast back (fp16/bf16 -> fp32; fp64 loses precision)", """
def rms_norm(x, g, eps):
    xf = x.float()
    return g * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))
"""),
        ("no keepdim: the (...,) mean broadcasts against the wrong axis (right for 1-D x)", """
def rms_norm(x, g, eps):
    return g * x / torch.sqrt(x.pow(2).mean(-1) + eps)
"""),
        ("normalises x in place and returns it: mutates the input, fails on a leaf needing grad", """
def rms_norm(x, g, eps):
    rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    x.div_(rms)
    x.mul_(g)
    return x
"""),
    ],
}

for _id, _answers in _CH10_BLIND.items():
    WRONG[_id].extend(_answers)
