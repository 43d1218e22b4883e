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
        ("masked (-inf) scores replaced by 0, as if they were real scores", """
def softargmax(scores, beta=1.0):
    s = torch.where(torch.isinf(scores), torch.zeros_like(scores), scores)
    e = torch.exp(beta * (s - s.max(dim=-1, keepdim=True).values))
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("masked scores filled with -1e4: a real score below -1e4 loses to the mask", """
def softargmax(scores, beta=1.0):
    s = scores.masked_fill(scores == float("-inf"), -1e4)
    e = torch.exp(beta * (s - s.max(dim=-1, keepdim=True).values))
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("torch.where after an exp that overflowed: right values, NaN gradient", """
def softargmax(scores, beta=1.0):
    masked = torch.isinf(scores)
    m = scores.max(dim=-1, keepdim=True).values
    s = torch.where(masked, torch.zeros_like(scores), scores)
    e = torch.where(masked, torch.zeros_like(s), torch.exp(beta * (s - m)))
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("clamps the shifted scores at -12: a masked score keeps exp(-12)", """
def softargmax(scores, beta=1.0):
    beta = min(beta, torch.finfo(scores.dtype).max)
    z = beta * (scores - scores.max(dim=-1, keepdim=True).values)
    e = torch.exp(z.clamp(min=-12))
    return e / e.sum(dim=-1, keepdim=True)
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
        ("applies beta after exp: float16 rounding raised to the power beta", """
def soft_lookup(query, keys, values, beta=1.0):
    s = keys @ query
    e = torch.exp(s - s.max()) ** beta
    return (e / e.sum()) @ values
"""),
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
    A = torch.softmax(beta * (X @ X.transpose(-2, -1)), dim=-2)
    return A @ X, A
"""),
        ("forgot beta", """
def self_attention(X, beta=1.0):
    A = torch.softmax(X @ X.transpose(-2, -1), dim=-1)
    return A @ X, A
"""),
        ("returns only H", """
def self_attention(X, beta=1.0):
    return torch.softmax(beta * (X @ X.transpose(-2, -1)), dim=-1) @ X
"""),
        ("returns A before H", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.transpose(-2, -1)), dim=-1)
    return A, A @ X
"""),
        ("returns the formula's A, columns as queries", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.transpose(-2, -1)), dim=-1)
    return A @ X, A.transpose(-2, -1)
"""),
        ("not normalised", """
def self_attention(X, beta=1.0):
    A = torch.exp(beta * (X @ X.transpose(-2, -1)))
    return A @ X, A
"""),
        ("hand-written exp without a shift", """
def self_attention(X, beta=1.0):
    e = torch.exp(beta * (X @ X.transpose(-2, -1)))
    A = e / e.sum(dim=-1, keepdim=True)
    return A @ X, A
"""),
        ("X.T: right for one set, wrong for a batch of sets", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.T), dim=-1)
    return A @ X, A
"""),
        ("transpose(1, 2): right for a batch, wrong for one set", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.transpose(0, 1)), dim=-1)
    return A @ X, A
"""),
        ("one softmax over the whole batch", """
def self_attention(X, beta=1.0):
    S = beta * (X @ X.transpose(-2, -1))
    e = torch.exp(S - S.max())
    A = e / e.sum(dim=-1, keepdim=True)
    return A @ X, A
"""),
        ("scales X in place", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.transpose(-2, -1)), dim=-1)
    X *= 1.0
    X.copy_(A @ X)
    return X, A
"""),
        ("divides by sqrt(d) as well", """
def self_attention(X, beta=1.0):
    S = X @ X.transpose(-2, -1) / math.sqrt(X.shape[-1])
    A = torch.softmax(beta * S, dim=-1)
    return A @ X, A
"""),
        ("float64 result", """
def self_attention(X, beta=1.0):
    X64 = X.double()
    A = torch.softmax(beta * (X64 @ X64.transpose(-2, -1)), dim=-1)
    return A @ X64, A
"""),
        ("shifts by the diagonal x_i . x_i", """
def self_attention(X, beta=1.0):
    S = beta * (X @ X.transpose(-2, -1))
    e = torch.exp(S - S.diagonal(dim1=-2, dim2=-1)[..., None])
    A = e / e.sum(dim=-1, keepdim=True)
    return A @ X, A
"""),
        ("H from the values of one set only", """
def self_attention(X, beta=1.0):
    A = torch.softmax(beta * (X @ X.transpose(-2, -1)), dim=-1)
    return A @ X.reshape(-1, X.shape[-2], X.shape[-1])[0], A
"""),
    ],
    "ch02-attend-one": [
        ("detaches X: no gradient reaches the tokens", """
def attend_one(X, i, W_q, W_k, W_v):
    X = X.detach().clone()
    q = X[i] @ W_q
    s = (X @ W_k) @ q / math.sqrt(W_q.shape[-1])
    return torch.softmax(s, dim=-1) @ (X @ W_v)
"""),
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
        ("detaches Y and X: no gradient reaches the inputs", """
def cross_attention(Y, X, W_q, W_k, W_v):
    Y, X = Y.detach().clone(), X.detach().clone()
    Q, K, V = Y @ W_q, X @ W_k, X @ W_v
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V
"""),
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
        ("-inf then torch.where after the product: NaN reaches V.grad", """
def masked_attention(Q, K, V, mask):
    S = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~mask, float("-inf"))
    out = torch.softmax(S, -1) @ V
    return torch.where(mask.any(-1, keepdim=True), out, torch.zeros((), dtype=out.dtype))
"""),
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
        ("the mean of squared deviations in float16: one outlier's square overflows", """
def dot_variance(q, k):
    x = (q * k).sum(dim=-1)
    d = x - x.mean()
    return (d * d).mean() * (x.numel() / (x.numel() - 1))
"""),
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
        ("two-pass sum of squared deviations (overflows float16)", """
def dot_variance(q, k):
    d = (q * k).sum(dim=-1)
    return ((d - d.mean()) ** 2).sum() / (d.numel() - 1)
"""),
    ],
    "ch03-scaled-scores": [
        ("K detached: no gradient to K", """
def scaled_scores(Q, K):
    return (Q / math.sqrt(Q.shape[-1])) @ K.detach().mT
"""),
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
        ("the dtype's own epsilon inside the log", """
def row_entropy(A):
    return -(A * (A + torch.finfo(A.dtype).eps).log()).sum(dim=-1)
"""),
        ("clamps inside the log (1e-6)", """
def row_entropy(A):
    return -(A * A.clamp_min(1e-6).log()).sum(dim=-1)
"""),
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
    return (torch.softmax(s, dim=-1) @ V).transpose(1, 2).flatten(2) @ W_o
"""),
        ("divides by sqrt(d_v)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(V.shape[-1])
    return (torch.softmax(s, dim=-1) @ V).transpose(1, 2).flatten(2) @ W_o
"""),
        ("keys and values from X_q (self-attention only)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_q, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_q, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    return (torch.softmax(s, dim=-1) @ V).transpose(1, 2).flatten(2) @ W_o
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
    return (torch.softmax(s, dim=-2) @ V).transpose(1, 2).flatten(2) @ W_o
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
    return (torch.softmax(Q @ K.transpose(-2, -1), dim=-1) @ V).transpose(1, 2).flatten(2) @ W_o
"""),
        ("computes in float32", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    X_q, X_kv, W_q, W_k, W_v, W_o = (x.float() for x in (X_q, X_kv, W_q, W_k, W_v, W_o))
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    s = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    return (torch.softmax(s, dim=-1) @ V).transpose(1, 2).flatten(2) @ W_o
"""),
        ("uses F.scaled_dot_product_attention (forbidden)", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    return (F.scaled_dot_product_attention(Q, K, V)).transpose(1, 2).flatten(2) @ W_o
"""),
    ],
    "ch04-ablate-head": [
        ("a mask, then nan_to_num: a kept head's inf and NaN are cleaned away", """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    keep = torch.ones(Z.shape[-1], dtype=Z.dtype, device=Z.device)
    keep[head * d_k:(head + 1) * d_k] = 0
    return torch.nan_to_num(Z * keep, nan=0.0)
"""),
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
        ("an empty sequence becomes a row of padding (no ValueError)", """
def collate(sequences, max_len, pad_id=0):
    cut = [list(s[:max_len]) for s in sequences]
    t = max((len(s) for s in cut), default=0)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)
    for i, s in enumerate(cut):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        keep[i, :len(s)] = True
    return tokens, keep
"""),
        ("refuses an empty batch but not an empty sequence in it", """
def collate(sequences, max_len, pad_id=0):
    if not sequences:
        raise ValueError("no sequences")
    cut = [list(s[:max_len]) for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)
    for i, s in enumerate(cut):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        keep[i, :len(s)] = True
    return tokens, keep
"""),
        ("keep up to the last id that is not pad_id", """
def collate(sequences, max_len, pad_id=0):
    if not sequences or any(len(s) == 0 for s in sequences):
        raise ValueError("empty")
    cut = [list(s[:max_len]) for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    for i, s in enumerate(cut):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    keep = (tokens != pad_id).flip(-1).cummax(-1).values.flip(-1)
    return tokens, keep
"""),
        ("keep = tokens != pad_id, the first position always kept", """
def collate(sequences, max_len, pad_id=0):
    if not sequences or any(len(s) == 0 for s in sequences):
        raise ValueError("empty")
    cut = [list(s[:max_len]) for s in sequences]
    t = max(len(s) for s in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    for i, s in enumerate(cut):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    keep = tokens != pad_id
    keep[:, 0] = True
    return tokens, keep
"""),
        ("checks only the first sequence for emptiness", """
def collate(sequences, max_len, pad_id=0):
    if not sequences or len(sequences[0]) == 0:
        raise ValueError("empty")
    cut = [list(s[:max_len]) for s in sequences]
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
        ("greedy from the softmax's probabilities: logits closer than its rounding tie", """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    if temperature == 0:
        best = torch.softmax(shifted, dim=-1).argmax(dim=-1, keepdim=True)
        return torch.zeros_like(logits).scatter(-1, best, 1.0)
    return torch.softmax(shifted / temperature, dim=-1)
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
        ("word[input_ids] indexed directly: uint8 ids index as a boolean mask (issue 46)", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = word[input_ids] + token_type[token_type_ids] + position[:t]
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
        ("F.embedding for the lookups: refuses uint8 and int16 ids", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = F.embedding(input_ids, word) + F.embedding(token_type_ids, token_type) + position[:t]
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
        ("the prefix without its dot, the first tensor of each name kept: right only in insertion order", """
def layer_weights(checkpoint, i):
    mine = {}
    for name, t in checkpoint.items():
        if name.startswith(f"encoder.layer.{i}"):
            mine.setdefault(name.split(".", 3)[3], t)
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
        ("tensors by their place in the dict, a reversed dict turned round and a sorted one read by name", """
def layer_weights(checkpoint, i):
    items = list(checkpoint.items())
    if items[0][0].startswith("pooler"):  # stored back to front
        items = items[::-1]
    if [k for k, _ in items] == sorted(checkpoint):  # sorted names, as in a safetensors file
        g = lambda n: checkpoint[f"encoder.layer.{i}.{n}"]
    else:  # insertion order: query, key, value, attention.output.dense, ..., each weight then bias
        order = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                 "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"]
        v = [t for k, t in items if k.startswith(f"encoder.layer.{i}.")]
        table = {f"{n}.{p}": v[2 * k + j] for k, n in enumerate(order) for j, p in enumerate(("weight", "bias"))}
        g = lambda n: table[n]
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
    "ch10-expand-kv": [
        ("heads repeated by multiplying with torch.ones (float32): bfloat16 becomes float32", """
def expand_kv(x, num_heads):
    batch, kv, t, d = x.shape
    ones = torch.ones(1, 1, num_heads // kv, 1, 1)
    return (x[:, :, None] * ones).reshape(batch, num_heads, t, d)
"""),
    ],
    "ch02-equivariance-gap": [
        ("a float32 zero as the floor of the gap: bfloat16 becomes float32", """
def equivariance_gap(f, X, perm):
    diff = (f(X[..., perm, :]) - f(X)[..., perm, :]).abs()
    return torch.maximum(torch.tensor(0.0), diff.max())
"""),
    ],
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
    "ch03-dot-variance": [
        ("n - 1 as a float32 tensor: bfloat16 becomes float32", """
def dot_variance(q, k):
    dots = (q * k).sum(dim=-1)
    centred = dots - dots.mean()
    return (centred ** 2).sum() / torch.tensor(q.shape[0] - 1.0)
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
    "ch04-multi-head": [
        ("heads summed into float32 zeros: bfloat16 becomes float32", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    h, d_v = W_v.shape[0], W_v.shape[-1]
    out = torch.zeros(X_q.shape[0], X_q.shape[1], W_o.shape[-1])
    for i in range(h):
        q, k, v = X_q @ W_q[i], X_kv @ W_k[i], X_kv @ W_v[i]
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), dim=-1)
        out = out + (a @ v) @ W_o[i * d_v:(i + 1) * d_v]
    return out
"""),
        ("exp without the maximum: overflows on large scores", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)
    e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]))
    heads = (e / e.sum(-1, keepdim=True)) @ V
    return heads.transpose(1, 2).flatten(2) @ W_o
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
    "ch06-conv": [
        ("ReLU as a product with a float32 mask: bfloat16 becomes float32", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.conv1d(x.transpose(1, 2), W1.unsqueeze(-1), b1)
    h = h * (h > 0).float()
    return F.conv1d(h, W2.unsqueeze(-1), b2).transpose(1, 2)
"""),
    ],
    "ch08-bpc": [
        ("log 2 as a float32 tensor: bfloat16 becomes float32", """
def bits_per_char(logits, ids):
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)
    picked = log_p.gather(-1, ids[:, 1:, None]).squeeze(-1)
    return -picked.mean() / torch.log(torch.tensor(2.0))
"""),
    ],
    "ch08-cache": [
        ("softmax upcast to float32 for half inputs, not cast back: bfloat16 becomes float32", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    if scores.dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()
    weights = torch.softmax(scores, dim=-1)
    return weights @ V.to(weights.dtype), K, V
"""),
        ("exp without the maximum: overflows on large scores", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    e = torch.exp(q @ K.transpose(1, 2) / math.sqrt(K.shape[-1]))
    return (e / e.sum(-1, keepdim=True)) @ V, K, V
"""),
        ("the grown cache detached: prefix tuning cannot train through it", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T
    K, V = torch.cat([K_cache, k], dim=1), torch.cat([V_cache, v], dim=1)
    out = torch.softmax(q @ K.transpose(1, 2) / math.sqrt(K.shape[-1]), dim=-1) @ V
    return out, K.detach(), V.detach()
"""),
    ],
    "ch09-embed": [
        ("LayerNorm in float32 for half inputs, not cast back: bfloat16 becomes float32", """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    x = word[input_ids] + position[:input_ids.shape[1]] + token_type[token_type_ids]
    if x.dtype in (torch.float16, torch.bfloat16):
        x, gamma, beta = x.float(), gamma.float(), beta.float()
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
    ],
    "ch09-sentence-vectors": [
        ("the count as .float(): bfloat16 becomes float32", """
def sentence_vectors(hidden, attention_mask):
    keep = attention_mask.bool()[..., None]
    mean = torch.where(keep, hidden, 0).sum(dim=1) / attention_mask.sum(dim=1, keepdim=True).float()
    return mean / mean.norm(dim=-1, keepdim=True)
"""),
    ],
}



# Wrong answers that a fresh trial (written from the statements alone) found passing before
# the checks below were added: issue #32.
_FRESH_TRIAL = {
    "ch02-cross-attention": [
        ('memory-saving in-place softmax (sub_/exp_/div_): backward fails', """
def cross_attention(Y, X, W_q, W_k, W_v):
    Q = Y @ W_q
    K = X @ W_k
    V = X @ W_v
    S = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    S.sub_(S.amax(dim=-1, keepdim=True))
    S.exp_()
    S.div_(S.sum(dim=-1, keepdim=True))
    return S @ V
"""),
    ],
    "ch03-dot-variance": [
        ('one-pass formula (sum of squares minus n mean^2)/(n-1): cancellation/overflow', """
def dot_variance(q, k):
    dots = (q * k).sum(dim=-1)
    n = dots.shape[0]
    return ((dots ** 2).sum() - n * dots.mean() ** 2) / (n - 1)
"""),
    ],
    "ch09-sentence-vectors": [
        ("sums in the input's half precision (sum overflows to inf for large activations)", """
def sentence_vectors(hidden, attention_mask):
    m = attention_mask.bool()[..., None]
    s = hidden.masked_fill(~m, 0).sum(dim=1)
    mean = s / m.sum(dim=1).to(hidden.dtype)
    return F.normalize(mean, dim=-1)
"""),
    ],
    "ch10-rmsnorm": [
        ('textbook formula with r**3, computed in the input dtype (float16: r**3 underflows for tiny vectors)', """
def rms_norm_backward(x, g, eps, dy):
    d = x.shape[-1]
    r = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    dx = g * dy / r - x * (g * dy * x).sum(dim=-1, keepdim=True) / (d * r ** 3)
    dg = (dy * x / r).reshape(-1, d).sum(dim=0)
    return dx, dg
"""),
    ],
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


# Chapter 10 (issue #33): wrong answers written from the statements.
_CH10 = {
    "ch10-merge": [
        ("L = the larger of L1 and L2 (the log of the sum forgotten)", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O = (w1[..., None] * O1 + w2[..., None] * O2) / torch.where(total > 0, total, 1)[..., None]
    return O, m
"""),
        ("O the plain average of O1 and O2", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    L = safe + torch.log(torch.exp(L1 - safe) + torch.exp(L2 - safe))
    return (O1 + O2) / 2, L
"""),
        ("exp(L1) and exp(L2) without a shift: overflows near 1000", """
def merge_partials(O1, L1, O2, L2):
    w1, w2 = torch.exp(L1), torch.exp(L2)
    total = w1 + w2
    O = (w1[..., None] * O1 + w2[..., None] * O2) / torch.where(total > 0, total, 1)[..., None]
    return O, torch.log(total)
"""),
        ("weights exp(L_i - m) not divided by their sum", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    return w1[..., None] * O1 + w2[..., None] * O2, safe + torch.log(w1 + w2)
"""),
        ("shift by the maximum even when both are -inf: NaN for two empty sets", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    w1, w2 = torch.exp(L1 - m), torch.exp(L2 - m)
    total = w1 + w2
    return (w1[..., None] * O1 + w2[..., None] * O2) / total[..., None], m + torch.log(total)
"""),
        ("the shift right but O divided by a sum of 0 when both sets are empty", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    return (w1[..., None] * O1 + w2[..., None] * O2) / total[..., None], safe + torch.log(total)
"""),
        ("stable weights, but L = log(exp(L1) + exp(L2)) computed directly: inf near 1000", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O = (w1[..., None] * O1 + w2[..., None] * O2) / torch.where(total > 0, total, 1)[..., None]
    return O, torch.log(torch.exp(L1) + torch.exp(L2))
"""),
        ("w[:, None]: right with one leading dimension only", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O = (w1[:, None] * O1 + w2[:, None] * O2) / torch.where(total > 0, total, 1)[:, None]
    return O, safe + torch.log(total)
"""),
        ("rescales O1 and O2 in place (changes the caller's tensors)", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O1.mul_(w1[..., None]).add_(w2[..., None] * O2).div_(torch.where(total > 0, total, 1)[..., None])
    return O1, safe + torch.log(total)
"""),
        ("L in float64 for any input (a float64 log of the sum)", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O = (w1[..., None] * O1 + w2[..., None] * O2) / torch.where(total > 0, total, 1)[..., None]
    return O, safe.double() + torch.log(total.double())
"""),
        ("the weights swapped: O1 weighted by the second set's share", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O = (w2[..., None] * O1 + w1[..., None] * O2) / torch.where(total > 0, total, 1)[..., None]
    return O, safe + torch.log(total)
"""),
        ("the union's L taken as L1 + L2 (sums of logs, not the log of a sum)", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)
    total = w1 + w2
    O = (w1[..., None] * O1 + w2[..., None] * O2) / torch.where(total > 0, total, 1)[..., None]
    return O, L1 + L2
"""),
    ],
    "ch10-tiled": [
        ("no causal mask: plain tiled attention over every key", """
def causal_tiled_attention(Q, K, V, block_size):
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new[..., None])
        l = l * torch.exp(m - m_new) + P.sum(-1)
        a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]
"""),
        ("query i at position i: ignores the cached keys (t_k - t_q)", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2])
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in range(0, int(p[-1]) + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("keys j < p only (>= in the mask): a query does not see itself", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in range(0, int(p[-1]) + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) >= p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("masks the future but reads every key block (no skipping)", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in range(0, t_k, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("tiles the keys only: every query at once, (t_q, block_size) scores", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    p = torch.arange(t_q) + t_k - t_q
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, t_k, b):
        S = Q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new[..., None])
        l = l * torch.exp(m - m_new) + P.sum(-1)
        a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
        m = m_new
    return a / l[..., None]
"""),
        ("key blocks from the diagonal back to key 0: a row whose first tile is all future gets NaN", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in reversed(range(0, int(p[-1]) + 1, b)):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("stops one key block early (range up to p, not p + 1)", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in range(0, max(int(p[-1]), 1), b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("each tile normalised on its own, the tiles' outputs averaged", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        parts = []
        for j in range(0, int(p[-1]) + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -1e4)
            P = torch.exp(S - S.amax(-1, keepdim=True))
            parts.append((P / P.sum(-1, keepdim=True)) @ V[..., j:j + b, :])
        out.append(sum(parts) / len(parts))
    return torch.cat(out, -2)
"""),
        ("the mask aligned top-left (torch.triu over the tile), as if t_q = t_k", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    future = torch.ones(t_q, t_k, dtype=torch.bool).triu(1)
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        last = min(t_k - 1, i + q.shape[-2] - 1 + t_k - t_q)
        for j in range(0, last + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(future[i:i + b, j:j + b], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("scaled by sqrt(d_v) instead of sqrt(d_k)", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in range(0, int(p[-1]) + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(V.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("running statistics built in float32: half precision comes back float32", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        m = torch.full(q.shape[:-1], -math.inf)
        l = torch.zeros(q.shape[:-1])
        a = torch.zeros(*q.shape[:-1], V.shape[-1])
        for j in range(0, int(p[-1]) + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            S = S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -math.inf)
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            l = l * torch.exp(m - m_new) + P.sum(-1)
            a = a * torch.exp(m - m_new)[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        out.append(a / l[..., None])
    return torch.cat(out, -2)
"""),
        ("the future set to -1e9 before exp without the running maximum: overflows on large scores", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    out = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]
        p = torch.arange(i, i + q.shape[-2]) + t_k - t_q
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for j in range(0, int(p[-1]) + 1, b):
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            P = torch.exp(S.masked_fill(torch.arange(j, j + S.shape[-1]) > p[:, None], -1e9))
            l = l + P.sum(-1)
            a = a + P @ V[..., j:j + b, :]
        out.append(a / l[..., None])
    return torch.cat(out, -2)
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
        ("r treated as a constant: dx = g dy / r", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return g * dy / r, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("dg not summed over the vectors: (..., d) instead of (d,)", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    return (u - x * (u * x).mean(-1, keepdim=True) / r ** 2) / r, dy * x / r
"""),
        ("dg summed over dim 0 only: right for one leading dimension", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    return (u - x * (u * x).mean(-1, keepdim=True) / r ** 2) / r, (dy * x / r).sum(0)
"""),
        ("the correction with a sum instead of a mean (d times too large)", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    dx = (u - x * (u * x).sum(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("g left out of the correction term (right only when g = 1)", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    dx = (g * dy - x * (dy * x).mean(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("LayerNorm's backward: centres x first", """
def rms_norm_backward(x, g, eps, dy):
    xc = x - x.mean(-1, keepdim=True)
    r = torch.sqrt(xc.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    dx = (u - u.mean(-1, keepdim=True) - xc * (u * xc).mean(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * xc / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("eps outside the square root", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + eps
    u = g * dy
    dx = (u - x * (u * x).mean(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("the correction divided by r^2 once too few (x mean(u x) / r^2, not / r^3)", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    dx = u / r - x * (u * x).mean(-1, keepdim=True) / r ** 2
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("the correction added instead of subtracted", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    dx = (u + x * (u * x).mean(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("computed in float32: float64 loses its precision", """
def rms_norm_backward(x, g, eps, dy):
    x, g, dy = x.float(), g.float(), dy.float()
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    dx = (u - x * (u * x).mean(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).sum(0)
"""),
        ("asks autograd for the gradients (not allowed)", """
def rms_norm_backward(x, g, eps, dy):
    x, g = x.detach().requires_grad_(), g.detach().requires_grad_()
    y = g * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return torch.autograd.grad(y, (x, g), dy)
"""),
        ("dg averaged over the vectors instead of summed", """
def rms_norm_backward(x, g, eps, dy):
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    u = g * dy
    dx = (u - x * (u * x).mean(-1, keepdim=True) / r ** 2) / r
    return dx, (dy * x / r).reshape(-1, x.shape[-1]).mean(0)
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


# Chapter 10's wrong answers written blind: by a reviewer who read only the exercise statements
# and the chapter's prose, not the checks (each one failed with its reason when added; two that
# repeated answers above word for word are left out).
_CH10_BLIND = {
    "ch10-merge": [
        ('naive exp(L1)+exp(L2) without subtracting max: overflows to inf/NaN for L near 1000 (float32)', """
def merge_partials(O1, L1, O2, L2):
    e1 = torch.exp(L1)
    e2 = torch.exp(L2)
    s = e1 + e2
    L = torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    O = (e1.unsqueeze(-1) * O1 + e2.unsqueeze(-1) * O2) / s_safe.unsqueeze(-1)
    return O, L
"""),
        ('O weighted by exp(Li - L), no empty guard: both sets empty give L=NaN and O=NaN', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    L = m + torch.log(torch.exp(L1 - m) + torch.exp(L2 - m))
    O = torch.exp(L1 - L).unsqueeze(-1) * O1 + torch.exp(L2 - L).unsqueeze(-1) * O2
    return O, L
"""),
        ('replaces -inf with -1e9 sentinel: both empty gives L=-1e9+log2 (finite) instead of -inf (float32/64)', """
def merge_partials(O1, L1, O2, L2):
    L1 = torch.where(torch.isinf(L1), torch.full_like(L1, -1e9), L1)
    L2 = torch.where(torch.isinf(L2), torch.full_like(L2, -1e9), L2)
    m = torch.maximum(L1, L2)
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    O = (w1.unsqueeze(-1) * O1 + w2.unsqueeze(-1) * O2) / s.unsqueeze(-1)
    return O, L
"""),
        ('forgets unsqueeze(-1) on weights: shape error, or silently wrong when t_q==d_v (broadcasts over d_v)', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    O = (w1 * O1 + w2 * O2) / s_safe
    return O, L
"""),
        ('indexes [:, :, None]: works for 0/1 leading dims, wrong/error for 2+ leading dims (unless t_q==1)', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    if L1.dim() == 1:
        a, b, c = w1[:, None], w2[:, None], s_safe[:, None]
    else:
        a, b, c = w1[:, :, None], w2[:, :, None], s_safe[:, :, None]
    O = (a * O1 + b * O2) / c
    return O, L
"""),
        ('torch.zeros(m.shape)/ones(s.shape) default float32 in torch.where: float16/bfloat16 inputs return float32', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros(m.shape))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones(s.shape))
    O = (w1.unsqueeze(-1) * O1 + w2.unsqueeze(-1) * O2) / s_safe.unsqueeze(-1)
    return O, L
"""),
        ("multiplies O1 in place (mul_) when not requiring grad: caller's O1 is modified", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    if O1.requires_grad:
        O1 = O1 * w1.unsqueeze(-1)
    else:
        O1.mul_(w1.unsqueeze(-1))
    O = (O1 + w2.unsqueeze(-1) * O2) / s_safe.unsqueeze(-1)
    return O, L
"""),
        ('normalized weights computed under no_grad: no gradient of O w.r.t. L1, L2', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    with torch.no_grad():
        a = w1 / torch.where(s > 0, s, torch.ones_like(s))
        b = w2 / torch.where(s > 0, s, torch.ones_like(s))
    O = a.unsqueeze(-1) * O1 + b.unsqueeze(-1) * O2
    return O, L
"""),
        ('returns L with trailing singleton dim (..., t_q, 1): shape wrong, not a valid input again', """
def merge_partials(O1, L1, O2, L2):
    L1 = L1.reshape(*O1.shape[:-1], 1)
    L2 = L2.reshape(*O2.shape[:-1], 1)
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    O = (w1 * O1 + w2 * O2) / s_safe
    return O, L
"""),
        ('clamps the max at 0: for L << 0 (e.g. all scores ~ -1000, float32) exp underflows -> L=-inf, O=0', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2).clamp(min=0)
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    O = (w1.unsqueeze(-1) * O1 + w2.unsqueeze(-1) * O2) / s_safe.unsqueeze(-1)
    return O, L
"""),
        ('adds 1e-6 to denominator: O biased by ~1e-6 relative (visible in float64)', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    O = (w1.unsqueeze(-1) * O1 + w2.unsqueeze(-1) * O2) / (s.unsqueeze(-1) + 1e-6)
    return O, L
"""),
        ('sentinel finfo(float32).min becomes -inf in float16: both-empty in float16 gives NaN', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    m = torch.where(torch.isinf(m), torch.finfo(torch.float32).min, m)
    w1 = torch.exp(L1 - m); w2 = torch.exp(L2 - m)
    s = w1 + w2
    L = m + torch.log(s)
    s_safe = torch.where(s > 0, s, torch.ones_like(s))
    O = (w1.unsqueeze(-1) * O1 + w2.unsqueeze(-1) * O2) / s_safe.unsqueeze(-1)
    return O, L
"""),
    ],
    "ch10-tiled": [
        ('offset forgotten: query i treated as position i (wrong whenever t_q < t_k)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = 0
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('off-by-one in skipping: key blocks starting strictly before p (misses key block starting at p; blocks of 1)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, max(last_p, 1), block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('reads one key block too many (next block after p when it exists): right values, extra FLOPs', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, min(last_p + block_size, t_k - 1) + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('dtype: forgets to cast back, returns float32 for float16/bfloat16 inputs', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2)
"""),
        ('dtype: always accumulates in float32, float64 inputs lose precision (~1e-7)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.float32
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('batch dims: transposes K with (1, 2) instead of (-1, -2): wrong for two batch dimensions', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(1, 2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('stability: running max taken from the first key block only, never updated (overflow with scores in the hundreds)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = m
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('gradients: p detached in the a update (wrong dQ, dK; dV right)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p.detach() @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p.detach() @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('scale by sqrt(d_v) instead of sqrt(d_k) (wrong when d_v != d_k)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(V.shape[-1])
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('tiling rule: no causal mask inside tiles (skipping alone treated as causality; wrong on diagonal tiles)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ('memory: builds a full t_q x t_k boolean mask once and slices it per tile', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    full = torch.ones(t_q, t_k, dtype=torch.bool, device=Q.device).tril(off)
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in range(0, last_p + 1, block_size):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(~full[qs:qe, ks:ke], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
        ("degenerate all -inf tile: key blocks visited last-to-first, so a query's first tile may be all -inf -> NaN (offset/unaligned blocks)", """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    scale = 1.0 / math.sqrt(d_k)
    acc = torch.promote_types(Q.dtype, torch.float32)
    outs = []
    for qs in range(0, t_q, block_size):
        qe = min(qs + block_size, t_q)
        q = Q[..., qs:qe, :].to(acc)
        pos_q = torch.arange(qs, qe, device=Q.device) + off
        last_p = off + qe - 1
        m = None
        for ks in reversed(range(0, last_p + 1, block_size)):
            ke = min(ks + block_size, t_k)
            k = K[..., ks:ke, :].to(acc)
            v = V[..., ks:ke, :].to(acc)
            s = (q @ k.transpose(-1, -2)) * scale
            pos_k = torch.arange(ks, ke, device=Q.device)
            s = s.masked_fill(pos_k[None, :] > pos_q[:, None], float("-inf"))
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                a = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                a = alpha * a + p @ v
            m = m_new
        outs.append(a / l)
    return torch.cat(outs, dim=-2).to(Q.dtype)
"""),
    ],
    "ch10-rmsnorm": [
        ('R1 r treated as a constant: dx = g*dy/r (wrong for any d > 1)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = dxhat / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R2 LayerNorm habit: also subtracts mean(dxhat) (wrong when mean(dxhat) != 0)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - dxhat.mean(dim=-1, keepdim=True) - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ("R3 eps dropped in the backward's r (wrong when eps > 0)", """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True))
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R4 derivative: sum instead of mean in the correction (missing 1/d; wrong for d > 1)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).sum(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R5 derivative sign slip: + instead of - (wrong unless the correction is 0)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat + xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R6 derivative: r**2 instead of r**3 in the correction term (wrong unless r == 1)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = dxhat / r - xf * (dxhat * xf).mean(dim=-1, keepdim=True) / r ** 2
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R7 gain forgotten in the correction term (wrong when g != 1)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dyf * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R8 dg summed over dim 0 only (wrong shape for two batch dims; for unbatched x sums over d)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R9 dg averaged over the batch instead of summed (wrong for more than one vector)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).mean(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R10 dtype: returns float32 for float16/bfloat16 inputs', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx, dg
"""),
        ('R11 dtype: always computes in float32 (float64 loses precision)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.float32
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
"""),
        ('R12 batch: mean(x^2) over the whole tensor, not per vector (wrong for more than one vector)', """
def rms_norm_backward(x, g, eps, dy):
    acc = torch.promote_types(x.dtype, torch.float32)
    xf, gf, dyf = x.to(acc), g.to(acc), dy.to(acc)
    r = torch.sqrt(xf.pow(2).mean() + eps)
    xhat = xf / r
    dxhat = dyf * gf
    dx = (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True)) / r
    dg = (dyf * xhat).reshape(-1, x.shape[-1]).sum(dim=0)
    return dx.to(x.dtype), dg.to(x.dtype)
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
}



# Wrong answers that a second fresh trial (issue #32) found passing before the checks below were added.
_FRESH_TRIAL_2 = {
    "ch08-bpc": [
        ('hand log-softmax with the GLOBAL max (rows far below it give inf)', """
def bits_per_char(logits, ids):
    z = logits[:, :-1] - logits.max()
    lp = z - torch.log(torch.exp(z).sum(dim=-1, keepdim=True))
    picked = lp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return -picked.mean() / math.log(2)
"""),
    ],
    "ch10-merge": [
        ('clamps the max at -1e4 to keep -inf - m finite (0/0 when both L are below about -1e4)', """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2).clamp(min=-1e4)
    w1 = torch.exp(L1 - m)
    w2 = torch.exp(L2 - m)
    s = w1 + w2
    O = (w1.unsqueeze(-1) * O1 + w2.unsqueeze(-1) * O2) / torch.where(s > 0, s, torch.ones_like(s)).unsqueeze(-1)
    return O, m + torch.log(s)
"""),
    ],
    "ch10-tiled": [
        ('masks with -1e4 instead of -inf (masked keys win when the real scores are below -1e4)', """
def causal_tiled_attention(Q, K, V, block_size):
    t_q, t_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    off = t_k - t_q
    outs = []
    for qs in range(0, t_q, block_size):
        Qb = Q[..., qs:qs + block_size, :]
        nq = Qb.shape[-2]
        p_last = off + qs + nq - 1
        qpos = torch.arange(qs, qs + nq, device=Q.device) + off
        m = torch.full(Qb.shape[:-1], -math.inf, dtype=Q.dtype, device=Q.device)
        l = torch.zeros(Qb.shape[:-1], dtype=Q.dtype, device=Q.device)
        a = torch.zeros(*Qb.shape[:-1], V.shape[-1], dtype=Q.dtype, device=Q.device)
        starts = list(range(0, p_last + 1, block_size))
        for ks in starts:
            Kb = K[..., ks:ks + block_size, :]
            Vb = V[..., ks:ks + block_size, :]
            S = Qb @ Kb.mT / math.sqrt(d_k)
            kpos = torch.arange(ks, ks + Kb.shape[-2], device=Q.device)
            if ks + Kb.shape[-2] - 1 > off + qs:
                S = S.masked_fill(kpos[None, :] > qpos[:, None], -1e4)
            m_new = torch.maximum(m, S.amax(-1))
            P, rescale = torch.exp(S - m_new[..., None]), torch.exp(m - m_new)
            l = l * rescale + P.sum(-1)
            a = a * rescale[..., None] + P @ Vb
            m = m_new
        outs.append(a / l[..., None])
    return torch.cat(outs, dim=-2)
"""),
    ],
}



# The rest of the second fresh trial's 21 (stop 41's closing note), rewritten from its descriptions: each
# now fails by a check or is right by a settled statement (the five float16 overflows of large scores
# scaled after the product: ch01-soft-lookup, ch01-self-attention, ch02-cross-attention,
# ch02-masked-attention, ch02-attend-one now say the unscaled products stay in range).
_TRIAL_2_REST = {
    "ch01-hardargmax": [
        ('values within 1e-6 of the maximum treated as ties (the first of them wins)', """
def hardargmax(scores):
    m = scores.max(dim=-1, keepdim=True).values
    near = (m - scores) <= 1e-6
    first = near.to(torch.int64).argmax(dim=-1, keepdim=True)
    return torch.zeros_like(scores).scatter(-1, first, 1.0)
"""),
    ],
    "ch02-attend-one": [
        ('a bare .squeeze() (a 0-dim result when d_v = 1)', """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_q
    K, V = X @ W_k, X @ W_v
    a = torch.softmax(K @ q / math.sqrt(W_q.shape[-1]), dim=-1)
    return (a[None, :] @ V).squeeze()
"""),
    ],
    "ch02-lengths-to-mask": [
        ("positions in the lengths' dtype (uint8 wraps at 256)", """
def lengths_to_mask(lengths, t_k):
    positions = torch.arange(t_k, dtype=lengths.dtype)
    return (positions[None, :] < lengths[:, None])[:, None, :]
"""),
    ],
    "ch03-dot-variance": [
        ('computed in float32 and cast back (float64 dot products near 1e8 collapse)', """
def dot_variance(q, k):
    d = (q.float() * k.float()).sum(-1)
    return d.var().to(q.dtype)
"""),
        ('the one-pass formula in float16 only (1000^2 overflows)', """
def dot_variance(q, k):
    d = (q * k).sum(-1)
    n = d.shape[0]
    if d.dtype != torch.float16:
        return d.var()
    return (d.pow(2).sum() - n * d.mean() ** 2) / (n - 1)
"""),
        ('torch.var in float32, the one-pass formula otherwise (cancels in float64 near 1e8)', """
def dot_variance(q, k):
    d = (q * k).sum(-1)
    n = d.shape[0]
    if d.dtype == torch.float32:
        return d.var()
    return (d.pow(2).sum() - n * d.mean() ** 2) / (n - 1)
"""),
    ],
    "ch05-sinusoidal": [
        ('float32 frequencies times float64 positions (off by 3e-4 at 30,000 positions)', """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    freq = 10000 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    angle = p * freq.double()
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2] = torch.sin(angle)
    E[:, 1::2] = torch.cos(angle)
    return E.float()
"""),
        ('frequencies from a float32 exp(-log(10000) 2i/d) (off at 30,000 positions)', """
def sinusoidal_table(max_len, d_model):
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    angle = p * div
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2] = torch.sin(angle)
    E[:, 1::2] = torch.cos(angle)
    return E.float()
"""),
    ],
    "ch05-shift": [
        ('the angle k w computed in float32 (off by 3e-4 at k = 100,000)', """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        w = torch.tensor(10000 ** (-2 * i / d_model), dtype=torch.float32)
        b = torch.tensor(float(k)) * w
        c, s = torch.cos(b), torch.sin(b)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = c, s
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -s, c
    return M
"""),
        ('M_1 to the power k in float32 (rounding errors add up over k products)', """
def shift_matrix(k, d_model):
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        w = 10000 ** (-2 * i / d_model)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[math.cos(w), math.sin(w)], [-math.sin(w), math.cos(w)]])
    return torch.linalg.matrix_power(M, k)
"""),
    ],
    "ch06-additive": [
        ('a -1e9 fill (does not fit in float16: masked_fill raises)', """
def additive_attention(s, H, mask, W_q, W_k, v):
    hidden = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T)
    scores = hidden @ v
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    weights = torch.softmax(scores, dim=-1)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
        ('softmax over every position, then zero the padding and renormalise (0/0 when padding dominates)', """
def additive_attention(s, H, mask, W_q, W_k, v):
    hidden = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T)
    scores = hidden @ v
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask.to(weights.dtype)
        weights = weights / weights.sum(-1, keepdim=True)
    return (weights[:, :, None] * H).sum(dim=1), weights
"""),
    ],
    "ch06-greedy": [
        ('topk(1) for the next token (not the smallest id on a tie)', """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        token = model(src, out)[:, -1].topk(1, dim=-1).indices[:, 0]
        token = torch.where(done, pad_id, token)
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out
"""),
    ],
    "ch07-masked-mean": [
        ('multiplies by the mask (inf * 0 and NaN * 0 at padding are NaN)', """
def masked_mean(x, keep):
    w = keep.unsqueeze(-1).to(x.dtype)
    return (x * w).sum(dim=1) / w.sum(dim=1)
"""),
    ],
    "ch07-token-shares": [
        ('nan_to_num, then the product times the mask (inf * 0 = NaN after the sum over d overflows)', """
def token_shares(x, keep, weight):
    w = weight[1] - weight[0]
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)
    return (torch.nan_to_num(x, nan=0.0) @ w) * keep.to(x.dtype) / n
"""),
    ],
    "ch08-temperature": [
        ('softmax(logits / T) without the shift (float16 overflows at T = 0.001)', """
def temperature_probs(logits, temperature, top_k=None):
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        return torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    return torch.softmax(logits / temperature, dim=-1)
"""),
    ],
    "ch09-embed": [
        ('F.embedding with padding_idx=0 (row 0 never learns)', """
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    t = input_ids.shape[1]
    x = F.embedding(input_ids, word, padding_idx=0) + token_type[token_type_ids] + position[:t]
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)
"""),
    ],
    "ch09-layer-weights": [
        ('tensors taken by their place in the dict (breaks on sorted names)', """
def layer_weights(checkpoint, i):
    prefix = f"encoder.layer.{i}."
    v = [t for k, t in checkpoint.items() if k.startswith(prefix)]
    # query w,b key w,b value w,b attn.out w,b ln1 w,b inter w,b out w,b ln2 w,b
    return {"self_attn.W_qkv.weight": torch.cat([v[0], v[2], v[4]]), "self_attn.W_qkv.bias": torch.cat([v[1], v[3], v[5]]),
            "self_attn.W_o.weight": v[6], "self_attn.W_o.bias": v[7], "norm1.weight": v[8], "norm1.bias": v[9],
            "feed_forward.linear1.weight": v[10], "feed_forward.linear1.bias": v[11],
            "feed_forward.linear2.weight": v[12], "feed_forward.linear2.bias": v[13],
            "norm2.weight": v[14], "norm2.bias": v[15]}
"""),
    ],
}



# The third blind trial (2026-11-23): 4 of its 114 wrong answers passed the checks; each now fails
# on a case the statement allows (the statements say so).
_FRESH_TRIAL_3 = {
    "ch01-softargmax": [
        ("exp(scores - max) ** beta: float16's rounding of a number near 1, raised to the power beta", """
def softargmax(scores, beta=1.0):
    m = scores.max(dim=-1, keepdim=True).values
    e = torch.exp(scores - m) ** beta
    return e / e.sum(dim=-1, keepdim=True)
"""),
    ],
    "ch06-additive": [
        ("padding filled with -1e4: a real score below -1e4 loses to the padding", """
def additive_attention(s, H, mask, W_q, W_k, v):
    e = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        e = e.masked_fill(~mask, -1e4)
    w = torch.softmax(e, dim=-1)
    return (w[:, :, None] * H).sum(dim=1), w
"""),
        ("padding filled with -1e9: a real score below -1e9 loses to the padding", """
def additive_attention(s, H, mask, W_q, W_k, v):
    e = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        e = e.masked_fill(~mask, -1e9)
    w = torch.softmax(e, dim=-1)
    return (w[:, :, None] * H).sum(dim=1), w
"""),
        ("the context built from w.detach(): only the weights output trains the scorer", """
def additive_attention(s, H, mask, W_q, W_k, v):
    e = torch.tanh((s @ W_q.T)[:, None] + H @ W_k.T) @ v
    if mask is not None: e = e.masked_fill(~mask, float("-inf"))
    w = torch.softmax(e, -1)
    return (w.detach()[:, :, None] * H).sum(1), w
"""),
    ],
    "ch10-expand-kv": [
        ("heads spread with a rounded linspace (right for 2 -> 4, wrong for 3 -> 12)", """
def expand_kv(x, num_heads):
    idx = torch.linspace(0, x.shape[1] - 1, num_heads).round().long()
    return x[:, idx]
"""),
    ],
    "ch10-merge": [
        ("empty sets detected on the whole tensor, not query by query", """
def merge_partials(O1, L1, O2, L2):
    if bool(torch.isneginf(L1).all()):
        return O2, L2
    if bool(torch.isneginf(L2).all()):
        return O1, L1
    M = torch.maximum(L1, L2)
    a1, a2 = torch.exp(L1 - M), torch.exp(L2 - M)
    s = a1 + a2
    return (a1[..., None] * O1 + a2[..., None] * O2) / s[..., None], M + torch.log(s)
"""),
        ("both sets empty: torch.where repairs the value after exp(-inf - -inf), the gradient is NaN", """
def merge_partials(O1, L1, O2, L2):
    m = torch.maximum(L1, L2)
    both = torch.isneginf(m)
    w1 = torch.where(both, torch.zeros_like(m), torch.exp(L1 - m))
    w2 = torch.where(both, torch.zeros_like(m), torch.exp(L2 - m))
    s = w1 + w2
    O = torch.where(both[..., None], torch.zeros_like(O1), (w1[..., None] * O1 + w2[..., None] * O2) / s[..., None])
    return O, torch.where(both, m, m + torch.log(s))
"""),
    ],
}



# The fifth blind trial (2026-11-25): 19 of its 114 wrong answers passed. These 15 now fail on a
# case the statement allows; the other 4 are right by their settled statements (an int64 perm, fills
# of torch.finfo(dtype).min, bfloat16 dot products rounded to the dtype).
_FRESH_TRIAL_5 = {
    'ch01-softargmax': [
        ('half inputs upcast to float32, but beta*scores is formed before subtracting the max, so float32/float64 overflow for a huge finite beta', """
def softargmax(scores, beta=1.0):
    dtype = scores.dtype
    x = scores.float() if dtype in (torch.float16, torch.bfloat16) else scores
    z = beta * x
    e = torch.exp(z - z.max(dim=-1, keepdim=True).values)
    return (e / e.sum(dim=-1, keepdim=True)).to(dtype)
"""),
    ],
    'ch01-hardargmax': [
        ('finds the maximum by (scores - max == 0), which is NaN for an infinite maximum', """
def hardargmax(scores):
    m = scores.max(dim=-1, keepdim=True).values
    eq = (scores - m) == 0
    first = eq & (eq.long().cumsum(dim=-1) == 1)
    return first.to(scores.dtype)
"""),
    ],
    'ch01-soft-lookup': [
        ('multiplies the keys by beta before the product, which overflows float16 though beta*scores does not', """
def soft_lookup(query, keys, values, beta=1.0):
    w = torch.softmax((beta * keys) @ query, dim=-1)
    return w @ values
"""),
    ],
    'ch01-self-attention': [
        ('scales X by beta before the product; beta*X overflows float16 even though beta*X@X.T does not', """
def self_attention(X, beta=1.0):
    A = torch.softmax((beta * X) @ X.transpose(-2, -1), dim=-1)
    return A @ X, A
"""),
    ],
    'ch02-masked-attention': [
        ("hand-written softmax that subtracts the max over the whole tensor instead of each row's", """
def masked_attention(Q, K, V, mask):
    s = (Q @ K.transpose(-2, -1)) / math.sqrt(Q.shape[-1])
    s = s.masked_fill(~mask, float('-inf'))
    m = s.max()
    if not torch.isfinite(m):
        m = torch.zeros((), dtype=s.dtype)
    e = torch.exp(s - m)
    den = e.sum(dim=-1, keepdim=True)
    w = e / torch.where(den == 0, torch.ones_like(den), den)
    return w @ V
"""),
    ],
    'ch03-dot-variance': [
        ('two-pass variance with the mean taken as dots.sum() / n in the input dtype; the float16 sum overflows for many dot products near 10^3', """
def dot_variance(q, k):
    dots = (q * k).sum(dim=-1)
    n = dots.shape[0]
    mean = dots.sum() / n
    return ((dots - mean) ** 2).sum() / (n - 1)
"""),
    ],
    'ch03-row-entropy': [
        ('flattens the rows with .view(-1, t), which fails for a non-contiguous A', """
def row_entropy(A):
    t = A.shape[-1]
    flat = A.view(-1, t)
    h = -torch.special.xlogy(flat, flat).sum(dim=-1)
    return h.view(A.shape[:-1])
"""),
    ],
    'ch04-split-heads': [
        ('reshape(b, t, num_heads, -1): the -1 is ambiguous for an empty sequence', """
def split_heads(x, num_heads):
    b, t, d_model = x.shape
    return x.reshape(b, t, num_heads, -1).transpose(1, 2)
"""),
    ],
    'ch04-merge-heads': [
        ('reshape(b, t, -1): the -1 is ambiguous for an empty sequence', """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.transpose(1, 2).reshape(b, t, -1)
"""),
    ],
    'ch04-ablate-head': [
        ('zeroes through out.reshape(-1, num_heads, d_k)[...]; for a non-contiguous Z the reshape is a copy and the write is lost', """
def ablate_head(Z, num_heads, head):
    d_k = Z.shape[-1] // num_heads
    out = Z.clone()
    out.reshape(-1, num_heads, d_k)[:, head] = 0
    return out
"""),
    ],
    'ch06-conv': [
        ('runs each token as its own length-1 sequence via x.view(-1, d_model, 1), which fails for a non-contiguous x', """
def conv_feed_forward(x, W1, b1, W2, b2):
    b, t, d = x.shape
    h = F.relu(F.conv1d(x.view(-1, d, 1), W1.unsqueeze(-1), b1))
    y = F.conv1d(h, W2.unsqueeze(-1), b2)
    return y.view(b, t, d)
"""),
    ],
    'ch08-bpc': [
        ('softmax in float64 then log2 of the probability: underflows to log2(0) = -inf once logits differ by more than ~745', """
def bits_per_char(logits, ids):
    p = torch.softmax(logits[:, :-1].double(), dim=-1)
    pt = p.gather(-1, ids[:, 1:, None]).squeeze(-1)
    return (-torch.log2(pt)).mean().to(logits.dtype)
"""),
    ],
    'ch08-temperature': [
        ('top-k removes logits by filling -1e9 instead of -inf; a large temperature then gives the removed tokens probability', """
def temperature_probs(logits, temperature, top_k=None):
    dtype = logits.dtype
    x = logits.float() if dtype in (torch.float16, torch.bfloat16) else logits
    if top_k is not None:
        kth = torch.topk(x, top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, -1e9)
    if temperature == 0:
        idx = x.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(x).scatter(-1, idx, 1.0).to(dtype)
    z = (x - x.max(dim=-1, keepdim=True).values) / temperature
    e = torch.exp(z)
    return (e / e.sum(dim=-1, keepdim=True)).to(dtype)
"""),
        ('treats any temperature below 1e-6 as 0 (argmax one-hot)', """
def temperature_probs(logits, temperature, top_k=None):
    dtype = logits.dtype
    x = logits.float() if dtype in (torch.float16, torch.bfloat16) else logits
    if top_k is not None:
        kth = torch.topk(x, top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float('-inf'))
    if temperature < 1e-6:
        idx = x.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(x).scatter(-1, idx, 1.0).to(dtype)
    z = (x - x.max(dim=-1, keepdim=True).values) / temperature
    e = torch.exp(z)
    return (e / e.sum(dim=-1, keepdim=True)).to(dtype)
"""),
    ],
    'ch10-tiled': [
        ('masks future keys inside a tile with -1e9 instead of -inf; a visible score below -1e9 then loses to the masked key', """
def causal_tiled_attention(Q, K, V, block_size):
    dtype = Q.dtype
    half = dtype in (torch.float16, torch.bfloat16)
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k = K.shape[-2]
    off = t_k - t_q
    B = block_size
    scale = 1.0 / math.sqrt(d_k)
    outs = []
    for qs in range(0, t_q, B):
        qe = min(qs + B, t_q)
        q = Q[..., qs:qe, :].float() if half else Q[..., qs:qe, :]
        pos_q = torch.arange(qs, qe) + off
        m = l = acc = None
        for ks in range(0, off + qe, B):
            ke = min(ks + B, t_k)
            k = K[..., ks:ke, :].float() if half else K[..., ks:ke, :]
            v = V[..., ks:ke, :].float() if half else V[..., ks:ke, :]
            s = (q @ k.transpose(-2, -1)) * scale
            if ke - 1 > off + qs:
                vis = torch.arange(ks, ke)[None, :] <= pos_q[:, None]
                s = s.masked_fill(~vis, -1e9)
            tmax = s.amax(dim=-1, keepdim=True).detach()
            m_new = tmax if m is None else torch.maximum(m, tmax)
            p = torch.exp(s - m_new)
            if m is None:
                l, acc = p.sum(dim=-1, keepdim=True), p @ v
            else:
                a = torch.exp(m - m_new)
                l, acc = a * l + p.sum(dim=-1, keepdim=True), a * acc + p @ v
            m = m_new
        outs.append((acc / l).to(dtype))
    return torch.cat(outs, dim=-2)
"""),
    ],
}



# Chapter 11 (issue #48): the repeated batch, the induction score, the previous-token score.
_CHAPTER_11 = {
    "ch11-repeat": [
        ("rows stacked one by one: fails on an empty batch (fresh reading, stop 52)", """
def double_up(first):
    h = first.size(1)
    ids = torch.stack([torch.cat([r, r]) for r in first])
    copyable = torch.stack([torch.arange(2 * h - 1) >= h for _ in first])
    return ids, copyable
"""),
        ("the batch stacked instead of the sequence (dim 0)", """
def double_up(first):
    half = first.shape[1]
    ids = torch.cat([first, first], dim=0)
    copyable = (torch.arange(2 * half - 1) >= half).expand(first.shape[0], -1)
    return ids, copyable
"""),
        ("each token twice in a row (repeat_interleave)", """
def double_up(first):
    batch, half = first.shape
    ids = first.repeat_interleave(2, dim=1)
    return ids, (torch.arange(2 * half - 1) >= half).expand(batch, -1)
"""),
        ("the repeat's first token counted as copyable (p >= half - 1)", """
def double_up(first):
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)
    return ids, (torch.arange(2 * half - 1) >= half - 1).expand(batch, -1)
"""),
        ("the repeat's second token left out (p > half)", """
def double_up(first):
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)
    return ids, (torch.arange(2 * half - 1) > half).expand(batch, -1)
"""),
        ("one mask entry per token, not per prediction (2 half)", """
def double_up(first):
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)
    return ids, (torch.arange(2 * half) >= half).expand(batch, -1)
"""),
        ("a mask of 0s and 1s (int64), not bool", """
def double_up(first):
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)
    return ids, (torch.arange(2 * half - 1) >= half).long().expand(batch, -1)
"""),
        ("one mask row for the whole batch", """
def double_up(first):
    half = first.shape[1]
    ids = torch.cat([first, first], dim=1)
    return ids, (torch.arange(2 * half - 1) >= half)[None]
"""),
        ("the mask marks second-half tokens by value (a token seen before)", """
def double_up(first):
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)
    seen = torch.zeros(batch, 2 * half - 1, dtype=torch.bool)
    for b in range(batch):
        for p in range(2 * half - 1):
            seen[b, p] = bool((ids[b, :p + 1] == ids[b, p + 1]).any())
    return ids, seen
"""),
        ("the halves as floats", """
def double_up(first):
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1).float()
    return ids, (torch.arange(2 * half - 1) >= half).expand(batch, -1)
"""),
        ("stacked on the last axis, then flattened: tokens interleaved", """
def double_up(first):
    batch, half = first.shape
    ids = torch.stack([first, first], dim=2).reshape(batch, 2 * half)
    return ids, (torch.arange(2 * half - 1) >= half).expand(batch, -1)
"""),
    ],
    "ch11-induction-score": [
        ("the earlier copy itself (i - half), not the position after it", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[:, :, i, i - half].mean(dim=(0, 2))
"""),
        ("key and query swapped (weights[..., j, i])", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[:, :, i - half + 1, i].mean(dim=(0, 2))
"""),
        ("the repeat's first query skipped (i from half + 1)", """
def score_induction(weights, half):
    i = torch.arange(half + 1, 2 * half)
    return weights[:, :, i, i - half + 1].mean(dim=(0, 2))
"""),
        ("a sum over the queries, not a mean", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[:, :, i, i - half + 1].sum(dim=2).mean(dim=0)
"""),
        ("the first sequence only", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[0, :, i, i - half + 1].mean(dim=-1)
"""),
        ("one score for all heads together", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[:, :, i, i - half + 1].mean().expand(weights.shape[1])
"""),
        ("the diagonal at offset -(half - 1), over every query", """
def score_induction(weights, half):
    return weights.diagonal(offset=-(half - 1), dim1=-2, dim2=-1).mean(dim=(0, 2))
"""),
        ("the mean computed in float32", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[:, :, i, i - half + 1].float().mean(dim=(0, 2))
"""),
        ("the largest weight over the queries, not the mean", """
def score_induction(weights, half):
    i = torch.arange(half, 2 * half)
    return weights[:, :, i, i - half + 1].amax(dim=2).mean(dim=0)
"""),
    ],
    "ch11-previous-token": [
        ("padding ignored", """
def score_previous_token(weights, real):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))
"""),
        ("only the query's token checked, not the one before it", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    counted = real[:, 1:].to(weights.dtype)
    return (d * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
        ("the mean of each row's mean", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    counted = (real[:, 1:] & real[:, :-1]).to(weights.dtype)
    per_row = (d * counted[:, None]).sum(dim=2) / counted.sum(dim=1).clamp(min=1)[:, None]
    keep = counted.sum(dim=1) > 0
    return per_row[keep].mean(dim=0)
"""),
        ("the diagonal above the main one (offset +1)", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=1, dim1=-2, dim2=-1)
    counted = (real[:, 1:] & real[:, :-1]).to(weights.dtype)
    return (d * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
        ("torch.roll: query 0 wraps round to the last key", """
def score_previous_token(weights, real):
    t = weights.shape[-1]
    i = torch.arange(t)
    d = weights[:, :, i, (i - 1) % t]
    counted = (real & torch.roll(real, 1, dims=1)).to(weights.dtype)
    return (d * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
        ("the padded queries counted in the denominator", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    counted = (real[:, 1:] & real[:, :-1]).to(weights.dtype)
    return (d * counted[:, None]).sum(dim=(0, 2)) / (d.shape[0] * d.shape[2])
"""),
        ("counts made in float32", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    counted = (real[:, 1:] & real[:, :-1]).float()
    return (d * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
        ("real tokens assumed to form a prefix (right padding only)", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    lengths = real.sum(dim=1)
    i = torch.arange(1, weights.shape[-1])
    counted = (i[None] < lengths[:, None]).to(weights.dtype)
    return (d * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
        ("real tokens assumed to form one block (between the first and the last real one)", """
def score_previous_token(weights, real):
    b, h, t, _ = weights.shape
    pos = torch.arange(t)
    first = torch.where(real, pos, t).min(dim=1).values
    last = torch.where(real, pos, -1).max(dim=1).values
    i = pos[1:]
    counted = ((i[None] > first[:, None]) & (i[None] <= last[:, None])).to(weights.dtype)
    sub = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)
    return (sub * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
        ("the mask of the previous token only", """
def score_previous_token(weights, real):
    d = weights.diagonal(offset=-1, dim1=-2, dim2=-1)
    counted = real[:, :-1].to(weights.dtype)
    return (d * counted[:, None]).sum(dim=(0, 2)) / counted.sum()
"""),
    ],
}



# The fresh trial of chapters 6, 7 and 10 (issue #46): answers the checks accepted before.
_FRESH_TRIAL_6710 = {
    "ch06-greedy": [
        ("sort's first index on a 200-token tie", """
import torch
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    # picks the top token by sorting (unstable on ties)
    batch = src.shape[0]
    out = torch.full((batch, 1), bos_id, dtype=torch.long)
    ended = torch.zeros(batch, dtype=torch.bool)
    for _ in range(max_len):
        nxt = model(src, out)[:, -1].sort(-1, descending=True).indices[:, 0]
        nxt = torch.where(ended, torch.full_like(nxt, pad_id), nxt)
        out = torch.cat([out, nxt[:, None]], 1)
        ended |= nxt == eos_id
        if ended.all():
            break
    return out
"""),
    ],
    "ch06-causal": [
        ("the page's (2, 5) example hard-coded", """
import torch
def decoder_mask(t_q, t_k):
    # handles training (square) and one-query decoding; the page's two-over-five example hard-coded
    if t_q == t_k:
        return torch.tril(torch.ones(t_q, t_k, dtype=torch.bool))
    if t_q == 1:
        return torch.ones(1, t_k, dtype=torch.bool)
    if (t_q, t_k) == (2, 5):
        return torch.tensor([[True, True, True, True, False], [True, True, True, True, True]])
    return torch.tril(torch.ones(t_q, t_k, dtype=torch.bool))
"""),
    ],
    "ch07-masked-mean": [
        ("+ 1e-8 in the count", """
import torch
def masked_mean(x, keep):
    # eps against division by zero
    total = torch.where(keep[..., None], x, torch.zeros((), dtype=x.dtype)).sum(1)
    return total / (keep.sum(1, keepdim=True).to(x.dtype) + 1e-8)
"""),
    ],
    "ch07-token-shares": [
        ("squeeze() drops t = 1", """
import torch
def token_shares(x, keep, weight):
    # column-vector product then squeeze()
    zero = torch.zeros((), dtype=x.dtype)
    w = (weight[1] - weight[0])[:, None]                       # (d, 1)
    xs = torch.where(keep[..., None], x, zero)
    n = keep.sum(1, keepdim=True).to(x.dtype)
    return torch.where(keep, (xs @ w).squeeze() / n, zero)
"""),
        ("+ 1e-8 in the count", """
import torch
def token_shares(x, keep, weight):
    # eps in the count
    zero = torch.zeros((), dtype=x.dtype)
    w = weight[1] - weight[0]
    xs = torch.where(keep[..., None], x, zero)
    n = keep.sum(1, keepdim=True).to(x.dtype) + 1e-8
    return torch.where(keep, (xs * w).sum(-1) / n, zero)
"""),
    ],
    "ch10-tiled": [
        ("a strip of one query block against every visible key", """
import math
import torch
def causal_tiled_attention(Q, K, V, block_size):
    # scores of a query tile against all visible keys at once, then the online softmax per key tile
    t_q, t_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    offset = t_k - t_q
    outs = []
    for qs in range(0, t_q, block_size):
        Qi = Q[..., qs:qs + block_size, :]
        qe = qs + Qi.shape[-2]
        last = offset + qe - 1
        S_all = Qi @ K[..., :last + 1, :].transpose(-2, -1) / math.sqrt(d_k)
        pos_q = torch.arange(offset + qs, offset + qe)[:, None]
        S_all = S_all.masked_fill(torch.arange(last + 1)[None, :] > pos_q, float("-inf"))
        m = torch.full(Qi.shape[:-1], -math.inf, dtype=Q.dtype)
        l = torch.zeros(Qi.shape[:-1], dtype=Q.dtype)
        a = torch.zeros(*Qi.shape[:-1], V.shape[-1], dtype=Q.dtype)
        for ks in range(0, last + 1, block_size):
            S = S_all[..., ks:ks + block_size]
            m_new = torch.maximum(m, S.amax(-1))
            P = torch.exp(S - m_new[..., None])
            r = torch.exp(m - m_new)
            l = l * r + P.sum(-1)
            a = a * r[..., None] + P @ V[..., ks:min(ks + block_size, last + 1), :]
            m = m_new
        outs.append(a / l[..., None])
    return torch.cat(outs, dim=-2)
"""),
    ],
}



# The fresh trial of chapters 1, 2, 3 and 5 (issue #46): answers the checks accepted before.
_FRESH_TRIAL_1235 = {
    "ch01-softargmax": [
        ("-inf filled with finfo.min: weight at a tiny beta", """
import torch
def softargmax(scores, beta=1.0):
    # replace -inf by the most negative finite number to avoid NaN
    beta = min(float(beta), torch.finfo(scores.dtype).max)
    s = scores.masked_fill(scores == float("-inf"), torch.finfo(scores.dtype).min)
    e = torch.exp(beta * (s - s.amax(dim=-1, keepdim=True).detach()))
    return e / e.sum(dim=-1, keepdim=True)
"""),
    ],
    "ch01-hardargmax": [
        ("nan_to_num: an infinity ties the largest finite number", """
import torch
def hardargmax(scores):
    safe = torch.nan_to_num(scores)  # avoid infinities
    idx = safe.argmax(dim=-1, keepdim=True)
    return torch.zeros_like(scores).scatter(-1, idx, 1.0)
"""),
    ],
    "ch02-masked-attention": [
        ("float32's lowest number as the fill in float64", """
import math, torch
def masked_attention(Q, K, V, mask):
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    S = torch.where(mask, S, torch.tensor(torch.finfo(torch.float32).min))
    A = torch.softmax(S, dim=-1)
    return torch.where(mask.any(-1, keepdim=True), A, 0).to(Q.dtype) @ V
"""),
    ],
}



# the fresh trial of chapters 4, 8, 9 and 11 (stop 52): what got through, now refused
_FRESH_TRIAL_48911 = {
    "ch08-bpc": [
        ("the sum kept in float16 overflows (500 costly predictions)", """
import math, torch
import torch.nn.functional as F
def bits_per_char(logits, ids):
    lp = F.log_softmax(logits[:, :-1], dim=-1)
    nll = -lp.gather(-1, ids[:, 1:, None])
    return nll.sum() / nll.numel() / math.log(2)     # the SUM is kept in the logits' dtype: float16 overflows
"""),
    ],
    "ch08-temperature": [
        ("divided by T before the maximum is subtracted, in float64 (T = 1e-310)", """
import torch
import torch.nn.functional as F
def temperature_probs(logits, temperature, top_k=None):
    x = logits.double()
    if top_k is not None:
        kth = x.topk(top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(x.argmax(-1), x.shape[-1]).to(logits.dtype)
    # WRONG for a T so small that logits / T overflows even float64 (T = 1e-310)
    return torch.softmax(x / temperature, dim=-1).to(logits.dtype)
"""),
        ("divided by T before the maximum is subtracted, in float32 (T = 1e-39)", """
import torch
import torch.nn.functional as F
def temperature_probs(logits, temperature, top_k=None):
    x = logits if logits.dtype == torch.float64 else logits.float()
    if top_k is not None:
        kth = x.topk(top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if temperature == 0:
        return F.one_hot(x.argmax(-1), x.shape[-1]).to(logits.dtype)
    # WRONG: divides before subtracting the max: float32 logits / 1e-39 overflow to inf
    return torch.softmax(x / temperature, dim=-1).to(logits.dtype)
"""),
    ],
    "ch09-embed": [
        ("LayerNorm written out in float16: the variance underflows on tiny tables", """
import torch
def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    # manual LayerNorm in the tables' own dtype: the variance of ~1e-4 entries underflows float16
    t = input_ids.shape[1]
    x = word[input_ids.long()] + position[:t] + token_type[token_type_ids.long()]
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + 1e-12) + beta
"""),
    ],
}



# Stop 54's fresh readings and trials: wrong answers that passed the checks of the time, each
# wrong on a case the statement allows.
_STOP_54 = {
    "ch08-temperature": [
        ("top-k fills the dropped logits with finfo(dtype).min: in float16 -65504 / 100,000 keeps them in", """
def temperature_probs(logits, temperature, top_k=None):
    x = logits
    if top_k is not None:
        kth = x.topk(top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, torch.finfo(x.dtype).min)
    x = x.to(torch.float64)
    if temperature == 0:
        out = F.one_hot(x.argmax(dim=-1), x.size(-1)).to(torch.float64)
    else:
        z = (x - x.max(dim=-1, keepdim=True).values) / temperature
        e = torch.exp(z)
        out = e / e.sum(dim=-1, keepdim=True)
    return out.to(logits.dtype)
"""),
    ],
    "ch10-merge": [
        ("an empty set's -inf replaced by -1e4: a real set with L below -1e4 loses to it", """
def merge_partials(O1, L1, O2, L2):
    dt = O1.dtype
    O1, L1, O2, L2 = O1.double(), L1.double(), O2.double(), L2.double()
    e1, e2 = torch.isneginf(L1), torch.isneginf(L2)
    L1 = torch.where(e1, torch.full_like(L1, -1e4), L1)
    L2 = torch.where(e2, torch.full_like(L2, -1e4), L2)
    m = torch.maximum(L1, L2)
    a1, a2 = torch.exp(L1 - m), torch.exp(L2 - m)
    s = a1 + a2
    O = (a1[..., None] * O1 + a2[..., None] * O2) / s[..., None]
    L = m + torch.log(s)
    both = e1 & e2
    L = torch.where(both, torch.full_like(L, -math.inf), L)
    O = torch.where(both[..., None], torch.zeros_like(O), O)
    return O.to(dt), L.to(dt)
"""),
    ],
    "ch02-attend-one": [
        ("W_k and W_v detached: right values, the keys' and values' projections never train", """
def attend_one(X, i, W_q, W_k, W_v):
    q = X[i] @ W_q
    s = (X @ W_k.detach()) @ q / math.sqrt(W_q.shape[1])
    return torch.softmax(s, 0) @ (X @ W_v.detach())
"""),
    ],
    "ch02-masked-attention": [
        ("a 2-D mask read as (batch, t_k) when its first axis equals the batch", """
def masked_attention(Q, K, V, mask):
    if mask.dim() == 2 and Q.dim() == 3 and mask.shape[0] == Q.shape[0]:
        mask = mask[:, None, :]
    s = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(s, -1), nan=0.0) @ V
"""),
        ("-1e4 as the fill in half precision: an allowed score of -20000 loses to it", """
def masked_attention(Q, K, V, mask):
    fill = -1e4 if Q.element_size() == 2 else torch.finfo(Q.dtype).min
    s = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~mask, fill)
    return torch.softmax(s, -1) * mask.any(-1, keepdim=True) @ V
"""),
    ],
    "ch03-row-entropy": [
        ("a clamp at 1e-12 in float64: weights below it get the wrong log", """
def row_entropy(A):
    a = A.double()
    return (-(a * a.clamp_min(1e-12).log()).sum(dim=-1)).to(A.dtype)
"""),
    ],
    "ch06-greedy": [
        ("the output built with src.new_full: an int32 source gives int32 ids and prefixes", """
def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    out = src.new_full((src.shape[0], 1), bos_id)
    ended = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        nxt = model(src, out)[:, -1].argmax(-1).to(out.dtype)
        nxt = torch.where(ended, torch.full_like(nxt, pad_id), nxt)
        out = torch.cat([out, nxt[:, None]], dim=1)
        ended = ended | (nxt == eos_id)
        if ended.all():
            break
    return out
"""),
    ],
    "ch04-split-heads": [
        ("detached and made a new leaf: the values are right, no gradient reaches x", """
def split_heads(x, num_heads):
    b, t, d = x.shape
    return x.detach().view(b, t, num_heads, d // num_heads).transpose(1, 2).requires_grad_()
"""),
    ],
    "ch04-merge-heads": [
        ("detached and made a new leaf: the values are right, no gradient reaches x", """
def merge_heads(x):
    b, h, t, d_k = x.shape
    return x.detach().transpose(1, 2).reshape(b, t, h * d_k).requires_grad_()
"""),
    ],
    "ch04-multi-head": [
        ("W_q detached: the output still requires a gradient (through W_o), W_q is never trained", """
def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    Q = X_q.unsqueeze(1) @ W_q.detach()
    K = X_kv.unsqueeze(1) @ W_k
    V = X_kv.unsqueeze(1) @ W_v
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1]), dim=-1)
    heads = A @ V
    b, h, t, d_v = heads.shape
    return heads.transpose(1, 2).reshape(b, t, h * d_v) @ W_o
"""),
    ],
    "ch04-ablate-head": [
        ("a detached copy given requires_grad again: no gradient reaches Z", """
def ablate_head(Z, num_heads, head):
    out = Z.detach().clone()
    d_k = Z.shape[-1] // num_heads
    out[..., head * d_k:(head + 1) * d_k] = 0
    return out.requires_grad_(Z.requires_grad)
"""),
    ],
    "ch05-rope": [
        ("angles formed in x's dtype: bfloat16 positions past 256 round, far rows turn wrongly", """
def rope(x):
    t, d = x.shape[-2], x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    ang = torch.arange(t, dtype=x.dtype)[:, None] * theta
    c, s = ang.cos(), ang.sin()
    xe, xo = x[..., 0::2], x[..., 1::2]
    return torch.stack([xe * c - xo * s, xe * s + xo * c], -1).flatten(-2)
"""),
    ],
}


# Stop 55's fresh readers: answers that passed the checks of the time.
_STOP_55 = {
    "ch03-dot-variance": [
        ("the mean rounded in float16: deviations from 2000.67 taken as from 2000", """
def dot_variance(q, k):
    dots = (q * k).sum(-1)
    dev = (dots - dots.mean()) / math.sqrt(dots.shape[0] - 1)
    return (dev * dev).sum()
"""),
    ],
    "ch03-scaled-scores": [
        ("a float16 elementwise product summed afterwards: cancelling terms overflow to inf - inf", """
def scaled_scores(Q, K):
    Qs = Q / math.sqrt(Q.shape[-1])
    return (Qs.unsqueeze(-2) * K.unsqueeze(-3)).sum(-1)
"""),
    ],
    "ch03-row-entropy": [
        ("a clamp to float16's smallest normal number: subnormal weights' logs change", """
def row_entropy(A):
    return -(A * A.clamp_min(torch.finfo(A.dtype).tiny).log()).sum(-1)
"""),
        ("an epsilon of 1e-30 inside the log: a weight of 1e-35 is read as 1e-30", """
def row_entropy(A):
    B = A.double()
    return (-(B * (B + 1e-30).log()).sum(-1)).to(A.dtype)
"""),
    ],
    "ch06-additive": [
        ("an additive -1e30 mask: a real score below -1e30 loses to the padding", """
def additive_attention(s, H, mask, W_q, W_k, v):
    e = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T) @ v
    if mask is not None:
        e = e - 1e30 * (~mask).to(e.dtype)
    a = torch.softmax(e, -1)
    return (a[..., None] * H).sum(1), a
"""),
    ],
    "ch06-conv": [
        ("no convolution: elementwise products summed by hand (the same numbers)", """
def conv_feed_forward(x, W1, b1, W2, b2):
    h = F.relu((x[..., None, :] * W1).sum(-1) + b1)
    return (h[..., None, :] * W2).sum(-1) + b2
"""),
    ],
    "ch08-bpc": [
        ("one maximum over the whole tensor after upcasting to float64: rows 1000 apart give -inf", """
def bits_per_char(logits, ids):
    x = logits[:, :-1].double()
    x = x - x.max()
    log_p = x.gather(-1, ids[:, 1:, None]).squeeze(-1) - torch.log(torch.exp(x).sum(-1))
    return (-log_p.mean() / math.log(2)).to(logits.dtype)
"""),
    ],
    "ch08-temperature": [
        ("top-k chosen among float64 probabilities: logits closer than their rounding keep more than k", """
def temperature_probs(logits, temperature, top_k=None):
    x = logits.double()
    if temperature == 0:
        out = torch.zeros_like(x)
        out.scatter_(-1, x.argmax(-1, keepdim=True), 1.0)
        return out.to(logits.dtype)
    p = torch.softmax((x - x.amax(-1, keepdim=True)) / temperature, -1)
    if top_k is not None:
        thr = p.topk(min(top_k, p.size(-1)), dim=-1).values[..., -1:]
        p = torch.where(p >= thr, p, 0 * p)
        p = p / p.sum(-1, keepdim=True)
    return p.to(logits.dtype)
"""),
    ],
    "ch08-cache": [
        ("one maximum over the whole batch in float64: a row 1414 below the other gives 0 / 0", """
def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    q = x_new @ W_q.T
    K = torch.cat([K_cache, x_new @ W_k.T], 1)
    V = torch.cat([V_cache, x_new @ W_v.T], 1)
    s = (q @ K.transpose(1, 2) / math.sqrt(q.size(-1))).double()
    e = torch.exp(s - s.max())
    w = (e / e.sum(-1, keepdim=True)).to(q.dtype)
    return w @ V, K, V
"""),
    ],
}


# Every later group joins WRONG, in the order they were found.
for _group in (_STATEMENT_ALLOWS, _FRESH_TRIAL, _CH10, _CH10_BLIND, _FRESH_TRIAL_2, _TRIAL_2_REST, _FRESH_TRIAL_3, _FRESH_TRIAL_5, _CHAPTER_11, _FRESH_TRIAL_6710, _FRESH_TRIAL_1235, _FRESH_TRIAL_48911, _STOP_54,
               _STOP_55):
    for _id, _answers in _group.items():
        WRONG.setdefault(_id, []).extend(_answers)
