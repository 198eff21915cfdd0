"""The regime matrix: for each function or module students write, the kinds of input its
hidden tests must build, each as a predicate over one comparison's inputs.

A regime applies to a function when its text allows such inputs: attention takes any batch
(so B = 1), any lengths (so one key, and N_q != N_k), values of another width than the keys
(d_k != d_v), any layout (a transposed or sliced view), any scale (tiny scores, and scores large
enough that exp overflows without the max), float32 and float64, and gradients flow through it;
a module is tested with every parameter drawn at random (a norm's default ones and zeros, or
twin projections initialised alike, hide a swap), in the modes it has. tests/regimes/
test_regimes.py runs each assignment's hidden tests on the source solutions and fails when a
function's comparisons miss one of its regimes.
"""

from __future__ import annotations

import functools

import torch

# ----- predicates over one comparison: (kind, inputs, module) -> bool -------------------------


def _tensors(inputs):
    return [t for t in inputs if isinstance(t, torch.Tensor)]


def _floats(inputs):
    return [t for t in _tensors(inputs) if t.is_floating_point()]


def dtype(d):
    def test(kind, inputs, module):
        params = list(module.parameters()) if module is not None else []
        return any(t.dtype == d for t in _floats(inputs) + params)
    return test


def gradients(kind, inputs, module):
    return kind == "gradients"


def non_contiguous(kind, inputs, module):
    return any(not t.is_contiguous() for t in _tensors(inputs))


def scale_below(bound):
    def test(kind, inputs, module):
        return any(0 < float(t.detach().abs().max()) < bound for t in _floats(inputs)
                   if t.numel())
    return test


def scale_above(bound):
    def test(kind, inputs, module):
        return any(float(t.detach().abs().max()) > bound for t in _floats(inputs) if t.numel())
    return test


def size(arg, dim, value):
    """inputs[arg].size(dim) == value."""
    def test(kind, inputs, module):
        t = inputs[arg] if len(inputs) > arg else None
        return isinstance(t, torch.Tensor) and t.dim() > abs(dim) - (dim < 0) and \
            t.size(dim) == value
    return test


def sizes_differ(a, da, b, db):
    """inputs[a].size(da) != inputs[b].size(db)."""
    def test(kind, inputs, module):
        ta = inputs[a] if len(inputs) > a else None
        tb = inputs[b] if len(inputs) > b else None
        return isinstance(ta, torch.Tensor) and isinstance(tb, torch.Tensor) and \
            ta.size(da) != tb.size(db)
    return test


def not_divisible(length_arg, length_dim, block_arg):
    """inputs[length_arg].size(length_dim) is no multiple of the int inputs[block_arg]."""
    def test(kind, inputs, module):
        t = inputs[length_arg] if len(inputs) > length_arg else None
        block = inputs[block_arg] if len(inputs) > block_arg else None
        return isinstance(t, torch.Tensor) and isinstance(block, int) and block > 0 and \
            t.size(length_dim) % block != 0
    return test


def weights_scaled(below=None, above=None):
    """A parameter named `...w.weight` (the additive score's) scaled: scores made tiny or
    large through the weights rather than the inputs."""
    def test(kind, inputs, module):
        if module is None:
            return False
        for name, p in module.named_parameters():
            if name.endswith("w.weight"):
                top = float(p.detach().abs().max())
                return (below is not None and top < below) or (above is not None and top > above)
        return False
    return test


def variance_below_eps(kind, inputs, module):
    """Every row's variance below the norm's eps: where eps added, eps as a floor and no eps
    give three different answers."""
    x, eps = inputs[0] if inputs else None, getattr(module, "eps", None)
    return isinstance(x, torch.Tensor) and eps is not None and \
        bool((x.detach().var(dim=-1, unbiased=False) < eps).all())


def mode(training: bool):
    def test(kind, inputs, module):
        return module is not None and module.training == training
    return test


def perturbed(kind, inputs, module):
    """Every parameter drawn at random: none all ones or all zeros, no two alike."""
    if module is None:
        return False
    params = [p.detach() for p in module.parameters()]
    if not params:
        return False
    for p in params:
        if bool((p == 1).all()) or bool((p == 0).all()):
            return False
    for i, p in enumerate(params):
        for q in params[i + 1:]:
            if p.shape == q.shape and torch.equal(p, q):
                return False
    return True


def starts_later(arg):
    """The int inputs[arg] (a first position) is above 0."""
    def test(kind, inputs, module):
        return len(inputs) > arg and isinstance(inputs[arg], int) and inputs[arg] > 0
    return test


def cached(kind, inputs, module):
    """Past keys and values given (the inputs after the new tokens)."""
    return len(inputs) > 1 and isinstance(inputs[1], torch.Tensor)


def one_key_head(kind, inputs, module):
    return getattr(module, "n_kv_head", None) == 1


# ----- the matrix ----------------------------------------------------------------------------

F64, F32 = dtype(torch.float64), dtype(torch.float32)
BOTH_DTYPES = {"float64": F64, "float32": F32}
ANY_LAYOUT = {"non-contiguous": non_contiguous}
SCALES = {"tiny scale (< 0.01)": scale_below(0.01), "large scale (> 20)": scale_above(20.0)}


def attention(q=0, k=1, v=2, batched=True):
    """The regimes of a function of (q, k, v, ...): every kind the text allows."""
    regimes = {"N = 1 (one key)": size(k, -2, 1), "N_q != N_k": sizes_differ(q, -2, k, -2),
               "d_k != d_v": sizes_differ(k, -1, v, -1), **ANY_LAYOUT, **SCALES,
               **BOTH_DTYPES, "gradients": gradients}
    if batched:
        regimes["B = 1"] = size(q, 0, 1)
    return regimes


def module(*modes, extra=None):
    regimes = {"parameters perturbed": perturbed, **BOTH_DTYPES, **(extra or {})}
    for m in modes:
        regimes[f"{m} mode"] = mode(m == "training")
    return regimes


MATRIX: dict[str, dict[str, dict]] = {
    "soft_select": {
        "softmax": {**ANY_LAYOUT, **SCALES, **BOTH_DTYPES, "gradients": gradients},
        "soft_select": {"N = 1 (one key)": size(1, -2, 1), **ANY_LAYOUT, **BOTH_DTYPES},
        "attention_pooling": {"N = 1 (one key)": size(1, 0, 1), **ANY_LAYOUT, **BOTH_DTYPES},
        "hard_select": {"N = 1 (one key)": size(1, -2, 1), **ANY_LAYOUT},
    },
    "self_attention": {
        "scaled_dot_product_attention": attention(),
        # (its values have the model's width, as its queries and keys: no d_k != d_v; no
        # dropout, so no modes)
        "MultiHeadAttention": {**{k: v for k, v in attention().items() if k != "d_k != d_v"},
                               **module()},
    },
    "rnn_attention": {
        # (its scores are scaled through the weights of w: the inputs pass through tanh)
        "AdditiveAttention": {"B = 1": size(0, 0, 1), "N = 1 (one key)": size(1, -2, 1),
                              **ANY_LAYOUT, "tiny scores": weights_scaled(below=0.01),
                              "large scores": weights_scaled(above=20.0), **BOTH_DTYPES,
                              "gradients": gradients, "parameters perturbed": perturbed},
        "DecoderStep": {"B = 1": size(1, 0, 1), "N = 1 (one key)": size(2, -2, 1),
                        **BOTH_DTYPES, "parameters perturbed": perturbed},
    },
    "transformer": {
        "LayerNorm": module(extra={**ANY_LAYOUT, "variance below eps": variance_below_eps,
                                   "gradients": gradients}),
        "MLP": module("evaluation", "training", extra=ANY_LAYOUT),
        "Block": module("evaluation", extra={"B = 1": size(0, 0, 1), "N = 1": size(0, 1, 1),
                                             **ANY_LAYOUT, "gradients": gradients}),
        "Decoder": module("evaluation", extra={"N = 1": size(0, 1, 1), "B = 1": size(0, 0, 1)}),
    },
    "efficient_attention": {
        "online_softmax": {**ANY_LAYOUT, **SCALES, **BOTH_DTYPES,
                           "length no block divides": not_divisible(0, -1, 1)},
        # (the text asks for the forward pass: FlashAttention's backward is an algorithm of
        # its own, so no gradients)
        "tiled_attention": {**{k: v for k, v in attention(batched=False).items()
                               if k != "gradients"},
                            "length no block divides": not_divisible(0, -2, 3)},
    },
    "tiny_gpt": {
        "apply_rotary": {"T = 1": size(0, -2, 1), "start > 0": starts_later(1), **ANY_LAYOUT,
                         **SCALES, **BOTH_DTYPES, "gradients": gradients},
        "CausalSelfAttention": module(extra={
            "B = 1": size(0, 0, 1), "one new token": size(0, 1, 1), "after a cache": cached,
            "one key head": one_key_head, "gradients": gradients}),
        "TinyGPT": module(extra={"B = 1": size(0, 0, 1), "one new token": size(0, 1, 1),
                                 "after a cache": cached}),
        # (the model it generates with comes in a partial: its dtype is not seen here)
        "generate": {"prompt of one token": size(0, 1, 1)},
    },
}

# What the hidden tests do not build yet, each named: the meta-test fails if one of these is
# built after all (take it off the list) and, as for any regime, if one not listed is missing.
KNOWN_GAPS: set[tuple[str, str, str]] = set()


@functools.cache
def regimes_of(assignment: str, function: str) -> dict:
    return MATRIX[assignment][function]
