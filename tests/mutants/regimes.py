"""The probes of each assignment: every function and module students write, called over a
seeded grid of regimes (tests/mutants/equivalence.py compares the reference with a mutant on
each).

Written from the notebooks' text (what each function must do for every input it allows), not
from the hidden tests: B = 1 and N = 1, N_q != N_k, d_k != d_v, non-contiguous and strided
views, tiny and huge scales, float32 and float64, gradients of the inputs and of every
parameter, parameters perturbed so that no two modules are alike, training and evaluation,
lengths that no tile divides, and tensors on the `meta` device (a tensor made on the CPU where
the inputs are elsewhere shows there). Where the text asks for more than values (tiles hidden by
the causal mask are skipped; memory grows about linearly), a probe measures that too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import torch

F64, F32 = torch.float64, torch.float32
SCALES = (1e-4, 1.0, 30.0, 1e4)  # tiny; unit; large enough to overflow exp without the max


@dataclass(frozen=True)
class Probe:
    name: str
    run: Callable  # (namespace, torch.Generator) -> a tree of results
    atol: float | None = None  # where the text asks for less than the dtype's precision
    rtol: float | None = None


def randn(g, *shape, dtype=F64, scale=1.0):
    return torch.randn(*shape, generator=g, dtype=dtype) * scale


def strided(t: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous view (every other element of a larger buffer)."""
    buffer = torch.zeros(*t.shape, 2, dtype=t.dtype)
    buffer[..., 0] = t
    return buffer[..., 0]


def transposed(t: torch.Tensor) -> torch.Tensor:
    """The same values, laid out transposed in memory (a non-contiguous view)."""
    return t.transpose(-2, -1).contiguous().transpose(-2, -1) if t.dim() >= 2 else strided(t)


def with_grads(fn, inputs, module=None, g=None):
    """fn(*inputs) and the gradients of a fixed random projection of its float outputs with
    respect to every float input and every parameter of module."""
    leaves = [x.detach().clone().requires_grad_(True) if isinstance(x, torch.Tensor)
              and x.is_floating_point() else x for x in inputs]
    out = fn(*leaves)
    flat = [o for o in (out if isinstance(out, tuple | list) else (out,))
            if isinstance(o, torch.Tensor) and o.is_floating_point() and o.requires_grad]
    if not flat:
        return out, "no gradient"
    weights = torch.Generator().manual_seed(123)
    loss = sum((o.nan_to_num(0.0, 0.0, 0.0) * torch.randn(o.shape, generator=weights,
                                                           dtype=o.dtype)).sum() for o in flat)
    params = list(module.named_parameters()) if module is not None else []
    wrt = [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad] + \
        [p for _, p in params]
    grads = torch.autograd.grad(loss, wrt, allow_unused=True)
    return out, list(grads), [name for name, _ in params]


def perturbed(module, g, dtype=F64):
    """module in dtype with every parameter drawn at random: no two alike, no weight 1, no
    bias 0 (a LayerNorm's default affine hides a missing weight or bias, twin projections
    initialised alike hide a swap)."""
    module = module.to(dtype)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=dtype) * 0.5)
    return module


def built(ns, name, *args, g, dtype=F64, **kwargs):
    torch.manual_seed(7)
    return perturbed(ns[name](*args, **kwargs), g, dtype)


def padding_mask(g, B, S, L=None):
    """(B, S) or (B, L, S): random True/False with at least one True (key 0) in every row."""
    shape = (B, S) if L is None else (B, L, S)
    mask = torch.rand(*shape, generator=g) > 0.4
    mask[..., 0] = True
    return mask


# --- soft_select -------------------------------------------------------------------------------


def soft_select_probes():
    def hard(shape_q, shape_k, d_v, dtype, view):
        def run(ns, g):
            keys = torch.randint(0, 2, shape_k, generator=g).to(dtype)
            keys[..., 1, :] = keys[..., 0, :]  # a repeated key
            query = torch.cat([keys[..., :1, :], torch.randint(
                0, 2, (*shape_q[:-2], shape_q[-2] - 1, shape_q[-1]), generator=g).to(dtype)], -2)
            values = randn(g, *shape_k[:-1], d_v, dtype=dtype)
            return ns["hard_select"](view(query), view(keys), view(values))
        return run

    def softmax(shape, dim, dtype, scale, view):
        def run(ns, g):
            x = randn(g, *shape, dtype=dtype, scale=scale)
            if len(shape) > 1:
                x[..., 0] = x[..., 0].abs() * 50 + 1  # a dominant entry along the last axis
            return with_grads(lambda x: ns["softmax"](x, dim=dim), [view(x)]) \
                if dtype == F64 else ns["softmax"](view(x), dim=dim)
        return run

    def soft(L, S, d, d_v, batch, temperature, scale, dtype, view):
        def run(ns, g):
            q = randn(g, *batch, L, d, dtype=dtype, scale=scale)
            k, v = randn(g, *batch, S, d, dtype=dtype), randn(g, *batch, S, d_v, dtype=dtype)
            return with_grads(lambda q, k, v: ns["soft_select"](q, k, v, temperature),
                              [view(q), view(k), view(v)])
        return run

    def pooling(L, S, d_y, bandwidth, scale, dtype):
        def run(ns, g):
            xq = randn(g, L, dtype=dtype, scale=scale)
            xk = randn(g, S, dtype=dtype, scale=scale)
            y = randn(g, S, dtype=dtype) if d_y is None else randn(g, S, d_y, dtype=dtype)
            return with_grads(lambda a, b, c: ns["attention_pooling"](a, b, c, bandwidth),
                              [xq, xk, y])
        return run

    views = {"contiguous": lambda t: t, "strided": strided, "transposed": transposed}
    for (shape_q, shape_k, d_v), (vname, view) in itertools.product(
            [((3, 4), (5, 4), 2), ((2, 3, 3), (2, 4, 3), 5), ((2, 3), (2, 3), 1)], views.items()):
        yield Probe(f"hard_select q{shape_q} k{shape_k} {vname}",
                    hard(shape_q, shape_k, d_v, F64, view))
    yield Probe("hard_select float32 values", hard((3, 4), (5, 4), 2, F32, views["contiguous"]))
    for shape, dim in [((7,), -1), ((1,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1),
                       ((2, 3, 4), -2), ((4, 1), -1)]:
        for scale, dtype in itertools.product((1.0, 1e-4, 1e3), (F64, F32)):
            yield Probe(f"softmax {shape} dim={dim} scale {scale} {dtype}",
                        softmax(shape, dim, dtype, scale, views["contiguous"]))
        yield Probe(f"softmax {shape} dim={dim} strided", softmax(shape, dim, F64, 3.0, strided))
    for (L, S, d, d_v, batch), T, scale in itertools.product(
            [(1, 1, 2, 2, ()), (3, 5, 4, 2, ()), (2, 3, 4, 6, (2,)), (4, 4, 3, 3, (1, 2))],
            (0.1, 1.0, 7.0), (1.0, 40.0)):
        yield Probe(f"soft_select L{L} S{S} d{d} dv{d_v} {batch} T={T} x{scale}",
                    soft(L, S, d, d_v, batch, T, scale, F64, views["contiguous"]))
    yield Probe("soft_select transposed keys", soft(3, 5, 4, 2, (2,), 0.5, 1.0, F64, transposed))
    yield Probe("soft_select float32", soft(3, 5, 4, 2, (), 1.0, 1.0, F32, views["contiguous"]))
    for (L, S, d_y), h, scale in itertools.product([(1, 1, None), (4, 6, None), (3, 5, 2)],
                                                   (0.1, 1.0, 3.0), (1.0, 30.0)):
        yield Probe(f"attention_pooling L{L} S{S} dy{d_y} h={h} x{scale}",
                    pooling(L, S, d_y, h, scale, F64))
    yield Probe("attention_pooling float32", pooling(4, 6, None, 0.5, 1.0, F32))


# --- by_hand ----------------------------------------------------------------------------------


def by_hand_probes():
    """The typed matrices. Integers exactly; the weights and outputs to two decimal places,
    which the notebook says are enough (so 1/15 for 1/14 is as right as 0.07)."""
    for name in ("Q", "K", "V", "scores", "scaled"):
        yield Probe(name, lambda ns, g, name=name: torch.as_tensor(ns[name], dtype=F64))
    for name in ("A", "Z"):
        yield Probe(name, lambda ns, g, name=name: torch.as_tensor(ns[name], dtype=F64),
                    atol=0.005, rtol=0.0)


# --- self_attention ---------------------------------------------------------------------------


def self_attention_probes():
    def causal(T, device):
        return lambda ns, g: ns["causal_mask"](T, device=device) if device else \
            ns["causal_mask"](T)

    def sdpa(batch, L, S, d, d_v, mask_kind, scale, dtype, view):
        def run(ns, g):
            q = randn(g, *batch, L, d, dtype=dtype, scale=scale)
            k, v = randn(g, *batch, S, d, dtype=dtype), randn(g, *batch, S, d_v, dtype=dtype)
            mask = {"none": None,
                    "padding": padding_mask(g, batch[0], S).view(
                        batch[0], *[1] * len(batch), S) if batch else padding_mask(g, 1, S)[0],
                    "causal": torch.ones(L, S, dtype=torch.bool).tril(),
                    "random": padding_mask(g, 1, S, L)[0]}[mask_kind]
            return with_grads(lambda q, k, v: ns["scaled_dot_product_attention"](
                q, k, v, mask) if mask is not None else ns["scaled_dot_product_attention"](
                q, k, v), [view(q), view(k), view(v)])
        return run

    def sdpa_meta(ns, g):
        q, k, v = (torch.empty(2, 3, 4, device="meta") for _ in range(3))
        return ns["scaled_dot_product_attention"](q, k, v, torch.ones(
            3, 3, dtype=torch.bool, device="meta"))

    def mha(d_model, n_head, B, L, S, mask_kind, training, dtype, view):
        def run(ns, g):
            module = built(ns, "MultiHeadAttention", d_model, n_head, g=g, dtype=dtype)
            module.train(training)
            query = randn(g, B, L, d_model, dtype=dtype)
            key = randn(g, B, S, d_model, dtype=dtype) if S != L else query
            value = randn(g, B, S, d_model, dtype=dtype)
            mask = {"none": None, "3d": padding_mask(g, B, S, L), "2d": padding_mask(g, 1, S, L)[0],
                    "causal": torch.ones(L, S, dtype=torch.bool).tril()}[mask_kind]
            return with_grads(lambda q, k, v: module(q, k, v, mask) if mask is not None
                              else module(q, k, v), [view(query), view(key), view(value)], module)
        return run

    def pe(T, d_model, device):
        return lambda ns, g: ns["positional_encoding"](T, d_model, device=device) if device \
            else ns["positional_encoding"](T, d_model)

    for T in (1, 2, 5):
        yield Probe(f"causal_mask({T})", causal(T, None))
    yield Probe("causal_mask(4, meta)", causal(4, "meta"))
    plain = lambda t: t  # noqa: E731
    for (batch, L, S, d, d_v), mask_kind in itertools.product(
            [((), 1, 1, 2, 2), ((), 3, 5, 4, 6), ((2,), 4, 4, 3, 3), ((2, 3), 2, 5, 4, 1)],
            ("none", "padding", "causal", "random")):
        for scale, dtype in [(1.0, F64), (1e-4, F64), (1e4, F64), (1e12, F64), (30.0, F32)]:
            yield Probe(f"sdpa {batch} L{L} S{S} d{d} dv{d_v} {mask_kind} x{scale} {dtype}",
                        sdpa(batch, L, S, d, d_v, mask_kind, scale, dtype, plain))
    yield Probe("sdpa transposed views", sdpa((2,), 3, 5, 4, 6, "padding", 1.0, F64, transposed))
    yield Probe("sdpa strided views", sdpa((2,), 3, 5, 4, 6, "random", 1.0, F64, strided))
    yield Probe("sdpa on meta", sdpa_meta)
    for (d_model, n_head, B, L, S), mask_kind in itertools.product(
            [(8, 2, 1, 1, 1), (12, 3, 2, 4, 4), (8, 4, 2, 3, 5), (6, 1, 1, 3, 2)],
            ("none", "3d", "2d", "causal")):
        if mask_kind == "causal" and L > S:
            continue
        yield Probe(f"mha d{d_model} h{n_head} B{B} L{L} S{S} {mask_kind}",
                    mha(d_model, n_head, B, L, S, mask_kind, False, F64, plain))
    yield Probe("mha float32 training", mha(8, 2, 2, 3, 5, "3d", True, F32, plain))
    yield Probe("mha transposed inputs", mha(8, 2, 2, 3, 5, "none", False, F64, transposed))
    yield Probe("mha strided inputs", mha(8, 2, 2, 4, 4, "3d", False, F64, strided))
    for T, d_model in [(1, 2), (7, 6), (50, 16), (3, 64)]:
        yield Probe(f"positional_encoding({T}, {d_model})", pe(T, d_model, None))
    yield Probe("positional_encoding on meta", pe(5, 8, "meta"))


# --- rnn_attention ----------------------------------------------------------------------------


def rnn_attention_probes():
    def additive(d_q, d_k, d_att, B, S, masked, scale, dtype, view):
        def run(ns, g):
            module = built(ns, "AdditiveAttention", d_q, d_k, d_att, g=g, dtype=dtype)
            with torch.no_grad():
                module.w.weight.mul_(scale)
            query, keys = randn(g, B, d_q, dtype=dtype), randn(g, B, S, d_k, dtype=dtype)
            mask = padding_mask(g, B, S) if masked else None
            return with_grads(lambda q, k: module(q, k, mask) if masked else module(q, k),
                              [view(query), view(keys)], module)
        return run

    def negative(ns, g):
        """Every score about -1e12: padding must still get no weight (a finite fill value
        such as -1e9 would then win)."""
        module = built(ns, "AdditiveAttention", 4, 3, 5, g=g)
        with torch.no_grad():
            module.W_q.weight.zero_()
            module.W_k.weight.abs_()
            module.w.weight.copy_(-module.w.weight.abs() * 1e12)
        query, keys = randn(g, 3, 4), randn(g, 3, 6, 3).abs() + 1
        return with_grads(lambda q, k: module(q, k, padding_mask(g, 3, 6)), [query, keys],
                          module)

    def decoder(vocab, d_emb, d_hidden, d_att, B, S, masked, scale):
        def run(ns, g):
            module = built(ns, "DecoderStep", vocab, d_emb, d_hidden, d_att, g=g)
            with torch.no_grad():
                module.attention.w.weight.mul_(scale)
            y_prev = torch.randint(0, vocab, (B,), generator=g)
            h, enc = randn(g, B, d_hidden), randn(g, B, S, d_hidden)
            mask = padding_mask(g, B, S) if masked else None
            return with_grads(lambda h, enc: module(y_prev, h, enc, mask) if masked
                              else module(y_prev, h, enc), [h, enc], module)
        return run

    def grid(d_h, C, d_att, B, H, W, scale, view):
        def run(ns, g):
            attention = built(ns, "AdditiveAttention", d_h, C, d_att, g=g)
            with torch.no_grad():
                attention.w.weight.mul_(scale)
            h, features = randn(g, B, d_h), randn(g, B, C, H, W)
            return with_grads(lambda h, f: ns["attend_grid"](attention, h, f),
                              [h, view(features)], attention)
        return run

    plain = lambda t: t  # noqa: E731
    for (d_q, d_k, d_att, B, S), masked, scale in itertools.product(
            [(6, 4, 5, 1, 1), (6, 4, 5, 3, 7), (3, 3, 2, 2, 4)], (False, True), (1.0, 1e3, 1e12)):
        yield Probe(f"additive dq{d_q} dk{d_k} B{B} S{S} mask={masked} x{scale}",
                    additive(d_q, d_k, d_att, B, S, masked, scale, F64, plain))
    yield Probe("additive float32", additive(6, 4, 5, 3, 7, True, 1.0, F32, plain))
    yield Probe("additive, every score about -1e12, with padding", negative)
    yield Probe("additive strided keys", additive(6, 4, 5, 3, 7, True, 1.0, F64, strided))
    for (vocab, d_emb, d_h, d_att, B, S), masked, scale in itertools.product(
            [(10, 4, 8, 6, 1, 1), (10, 4, 8, 6, 3, 5), (7, 3, 5, 4, 2, 6)], (False, True),
            (1.0, 1e3)):
        yield Probe(f"decoder step B{B} S{S} mask={masked} x{scale}",
                    decoder(vocab, d_emb, d_h, d_att, B, S, masked, scale))
    for (d_h, C, d_att, B, H, W), scale in itertools.product(
            [(8, 3, 4, 1, 1, 1), (8, 3, 4, 2, 2, 3), (5, 4, 3, 2, 3, 2)], (1.0, 1e3)):
        yield Probe(f"attend_grid B{B} C{C} {H}x{W} x{scale}",
                    grid(d_h, C, d_att, B, H, W, scale, plain))
    yield Probe("attend_grid channels-last features",
                grid(8, 3, 4, 2, 2, 3, 1.0,
                     lambda f: f.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)))


# --- transformer ------------------------------------------------------------------------------


def transformer_probes():
    def layernorm(d, eps, shape, scale, dtype):
        def run(ns, g):
            module = built(ns, "LayerNorm", d, g=g, dtype=dtype, **({"eps": eps} if eps else {}))
            x = randn(g, *shape, d, dtype=dtype, scale=scale) + 3 * scale
            return with_grads(module, [x], module)
        return run

    def mlp(d, d_ff, p, training, dtype):
        def run(ns, g):
            module = built(ns, "MLP", d, d_ff, p, g=g, dtype=dtype).train(training)
            x = randn(g, 3, 4, d, dtype=dtype)
            torch.manual_seed(11)
            return with_grads(module, [x], module)
        return run

    def block(d, n_head, d_ff, p, norm_first, training, B, T, scale):
        def run(ns, g):
            module = built(ns, "Block", d, n_head, d_ff, p, norm_first=norm_first,
                           g=g).train(training)
            x = randn(g, B, T, d, scale=scale)
            torch.manual_seed(11)
            return with_grads(module, [x], module)
        return run

    def decoder(vocab, d, n_head, d_ff, n_layer, max_len, B, T):
        def run(ns, g):
            module = built(ns, "Decoder", vocab, d, n_head, d_ff, n_layer, max_len,
                           g=g, dtype=F32).eval()
            idx = torch.randint(0, vocab, (B, T), generator=g)
            return with_grads(lambda: module(idx), [], module)
        return run

    class SpyLM(torch.nn.Module):
        """A stand-in model whose logits depend on every token it is given and on their
        positions; it records what it was called with and refuses more than max_len tokens."""

        def __init__(self, max_len, vocab=11):
            super().__init__()
            self.max_len, self.vocab, self.calls = max_len, vocab, []

        def forward(self, idx):
            self.calls.append(tuple(idx.shape))
            if idx.size(1) > self.max_len:
                raise IndexError("more tokens than max_len")
            pos = torch.arange(idx.size(1), dtype=F64)
            x = torch.cumsum(torch.sin(idx.to(F64) * 1.3 + pos * 0.7), dim=1)
            return torch.sin(x[..., None] * torch.arange(1, self.vocab + 1, dtype=F64))

    def greedy_spy(B, T, max_len):
        def run(ns, g):
            model = SpyLM(max_len)
            idx = torch.randint(0, 11, (B, T), generator=g)
            return ns["greedy_step"](model, idx), ns["generate"](model, idx, 5), model.calls
        return run

    def greedy(B, T, max_len):
        def run(ns, g):
            module = built(ns, "Decoder", 11, 16, 2, 32, 1, max_len, g=g, dtype=F32).eval()
            idx = torch.randint(0, 11, (B, T), generator=g)
            return ns["greedy_step"](module, idx), ns["generate"](module, idx, 4)
        return run

    for (d, eps, shape), scale in itertools.product(
            [(8, None, (2, 5)), (1, None, (3,)), (6, 1e-3, (1, 1)), (5, 0.5, (2, 3, 2))],
            (1e-3, 1.0, 1e3)):
        yield Probe(f"LayerNorm({d}, eps={eps}) {shape} x{scale}",
                    layernorm(d, eps, shape, scale, F64))
    yield Probe("LayerNorm float32", layernorm(8, None, (2, 5), 1.0, F32))
    for p, training, dtype in [(0.0, False, F64), (0.5, False, F64), (0.5, True, F64),
                               (1.0, True, F64), (0.3, True, F32)]:
        yield Probe(f"MLP dropout={p} training={training} {dtype}", mlp(8, 32, p, training, dtype))
    for norm_first, (p, training), (B, T), scale in itertools.product(
            (True, False), [(0.0, False), (0.5, False), (0.4, True)], [(1, 1), (2, 5)],
            (1.0, 20.0)):
        yield Probe(f"Block norm_first={norm_first} dropout={p} training={training} B{B} T{T} "
                    f"x{scale}", block(8, 2, 16, p, norm_first, training, B, T, scale))
    for n_layer, B, T in [(1, 1, 1), (2, 2, 6), (3, 3, 8)]:
        yield Probe(f"Decoder layers={n_layer} B{B} T{T}", decoder(13, 8, 2, 16, n_layer, 8, B, T))
    for B, T, max_len in [(1, 1, 6), (2, 3, 6), (2, 6, 6), (3, 9, 6)]:
        yield Probe(f"greedy_step B{B} T{T} max_len={max_len}", greedy(B, T, max_len))
        yield Probe(f"greedy_step B{B} T{T} max_len={max_len}, a model that records its calls",
                    greedy_spy(B, T, max_len))


# --- efficient_attention ----------------------------------------------------------------------


def efficient_attention_probes():
    def online(shape, block, scale, dtype, view, negative=False):
        def run(ns, g):
            x = randn(g, *shape, dtype=dtype, scale=scale)
            if negative:
                x = -x.abs() - 5 * scale
            return with_grads(lambda x: ns["online_softmax"](x, block), [view(x)]) \
                if dtype == F64 else ns["online_softmax"](view(x), block)
        return run

    def tiled(batch, L, S, d, d_v, bq, bk, causal, scale, dtype, view):
        def run(ns, g):
            q = randn(g, *batch, L, d, dtype=dtype, scale=scale)
            k, v = randn(g, *batch, S, d, dtype=dtype), randn(g, *batch, S, d_v, dtype=dtype)
            return with_grads(lambda q, k, v: ns["tiled_attention"](q, k, v, bq, bk, causal),
                              [view(q), view(k), view(v)])
        return run

    def poisoned(length, block):
        """Causal: the values of keys p.. set to NaN reach no row before p unless a tile the
        mask hides entirely was computed."""
        def run(ns, g):
            q, k, v = (randn(g, length, 8) for _ in range(3))
            out = []
            for p in range(block, length, block):
                bad = v.clone()
                bad[p:] = float("nan")
                out.append(ns["tiled_attention"](q, k, bad, block, block, True)[:p])
            return out
        return run

    def work(ns, g):
        q, k, v = (randn(g, 64, 8, dtype=F32) for _ in range(3))
        ops = {c: ns["count_operations"](lambda c=c: ns["tiled_attention"](q, k, v, 8, 8, c))
               for c in (False, True)}
        return ops[True] / ops[False] < 0.8  # the notebook's bar: skipped tiles do less work

    def memory(ns, g):
        sizes = [64, 128, 256, 512]
        inputs = {n: tuple(randn(g, n, 16, dtype=F32) for _ in range(3)) for n in sizes}
        peaks = [ns["peak_memory"](lambda n=n: ns["tiled_attention"](*inputs[n], 32, 32))
                 for n in sizes]
        return ns["growth_exponent"](sizes, peaks) <= 1.3  # about linear, as the text asks

    def cache(shapes, dtype):
        def run(ns, g):
            cache = ns["KVCache"]()
            out = []
            for t in shapes:
                k, v = randn(g, 2, 3, t, 4, dtype=dtype), randn(g, 2, 3, t, 4, dtype=dtype)
                out.append(cache.append(k, v))
            out.append((cache.k, cache.v))
            return out
        return run

    def cached_lm(vocab, d, n_head, n_layer, max_len, B, T, n_new, dtype):
        def run(ns, g):
            module = built(ns, "CachedLM", vocab, d, n_head, n_layer, max_len, g=g,
                           dtype=dtype).eval()
            idx = torch.randint(0, vocab, (B, T), generator=g)
            caches = [ns["KVCache"]() for _ in range(n_layer)]
            steps = [module.step(idx[:, t:t + 1], t, caches) for t in range(T)]
            calls, step = [], module.step

            def recorded(token, t, caches):  # what generate asks of step, and what it gets
                logits = step(token, t, caches)
                calls.append((token.clone(), t, logits, [c.k.shape for c in caches]))
                return logits

            module.step = recorded
            tokens = module.generate(idx[:, :2], n_new)
            # the calls the tokens depend on (2 prompt positions, n_new - 1 new ones); one more
            # step after the last token is wasted work, not a different answer
            return steps, tokens, calls[:n_new + 1]
        return run

    plain = lambda t: t  # noqa: E731
    for shape, block in [((7,), 4), ((1,), 4), ((3, 9), 4), ((2, 3, 8), 4), ((2, 5), 1),
                         ((2, 5), 16), ((4, 12), 5)]:
        for scale, dtype in [(1.0, F64), (1e-4, F64), (1e3, F64), (30.0, F32)]:
            yield Probe(f"online_softmax {shape} block={block} x{scale} {dtype}",
                        online(shape, block, scale, dtype, plain))
        for scale in (1.0, 1e12):
            yield Probe(f"online_softmax {shape} block={block} all negative x{scale}",
                        online(shape, block, scale, F64, plain, negative=True))
    yield Probe("online_softmax strided", online((3, 9), 4, 1.0, F64, strided))
    shapes = [((), 1, 1, 2, 2), ((), 8, 8, 4, 4), ((), 12, 12, 4, 3), ((2,), 9, 13, 4, 6),
              ((2, 2), 10, 10, 3, 5)]
    blocks = [(3, 5), (16, 16), (5, 3)]
    for (batch, L, S, d, d_v), (bq, bk), causal in [
            *itertools.product(shapes, blocks, (False, True)),
            *itertools.product(shapes[2:3], [(4, 4), (1, 2), (12, 1)], (False, True))]:
        if causal and L != S:
            continue
        for scale, dtype in [(1.0, F64), (1e12, F64), (30.0, F32)]:
            yield Probe(f"tiled {batch} L{L} S{S} d{d} dv{d_v} blocks {bq}x{bk} causal={causal}"
                        f" x{scale} {dtype}",
                        tiled(batch, L, S, d, d_v, bq, bk, causal, scale, dtype, plain))
    yield Probe("tiled transposed views", tiled((2,), 9, 13, 4, 6, 4, 4, False, 1.0, F64,
                                                transposed))
    yield Probe("tiled causal strided views", tiled((), 12, 12, 4, 3, 5, 3, True, 1.0, F64,
                                                    strided))
    for length, block in [(64, 8), (20, 6)]:
        yield Probe(f"tiled causal: hidden tiles never computed ({length}, {block})",
                    poisoned(length, block))
    yield Probe("tiled causal does less work", work)
    yield Probe("tiled memory grows about linearly", memory)
    for shapes in [(1,), (3, 1, 1), (2, 4)]:
        yield Probe(f"KVCache appends {shapes}", cache(shapes, F64))
    for config in [(11, 16, 2, 2, 32, 4, 6, 8), (7, 8, 1, 1, 16, 1, 3, 5),
                   (13, 12, 3, 3, 24, 2, 5, 10)]:
        for dtype in (F32, F64):
            yield Probe(f"CachedLM {config} {dtype}", cached_lm(*config, dtype))


# --- tiny_gpt (the capstone) -------------------------------------------------------------------


def tiny_gpt_probes():
    def rotary(shape, start, scale, dtype, view):
        def run(ns, g):
            x = randn(g, *shape, dtype=dtype, scale=scale)
            return with_grads(lambda x: ns["apply_rotary"](x, start), [view(x)]) \
                if dtype == F64 else ns["apply_rotary"](view(x), start)
        return run

    def attention(n_head, n_kv_head, B, t, T, dtype):
        def run(ns, g):
            module = built(ns, "CausalSelfAttention", 24, n_head, n_kv_head, g=g, dtype=dtype)
            d_head = 24 // n_head
            x = randn(g, B, T, 24, dtype=dtype)
            past = [] if t == 0 else [randn(g, B, n_kv_head, t, d_head, dtype=dtype)
                                      for _ in range(2)]
            return with_grads(module, [x, *past], module)
        return run

    def model(vocab, d, n_head, n_kv_head, n_layer, B, t, T, dtype):
        def run(ns, g):
            module = built(ns, "TinyGPT", vocab, d, n_head, n_kv_head, 2 * d, n_layer, g=g,
                           dtype=dtype)
            idx = torch.randint(0, vocab, (B, t + T), generator=g)
            if t == 0:
                return with_grads(module, [idx], module)
            with torch.no_grad():
                _, k, v = module(idx[:, :t])
            return module(idx[:, t:], k, v)
        return run

    def generate(vocab, d, n_head, n_kv_head, n_layer, B, T, n_new, dtype):
        def run(ns, g):
            module = built(ns, "TinyGPT", vocab, d, n_head, n_kv_head, 2 * d, n_layer, g=g,
                           dtype=dtype).eval()
            idx = torch.randint(0, vocab, (B, T), generator=g)
            return ns["generate"](module, idx, n_new)
        return run

    plain = lambda t: t  # noqa: E731
    for shape in [(1, 2), (5, 8), (2, 3, 6, 16), (1, 1, 1, 4)]:
        for start in (0, 1, 37):
            for scale, dtype in [(1.0, F64), (1e-4, F64), (30.0, F64), (1.0, F32)]:
                yield Probe(f"apply_rotary {shape} start={start} x{scale} {dtype}",
                            rotary(shape, start, scale, dtype, plain))
    yield Probe("apply_rotary strided", rotary((3, 7, 8), 5, 1.0, F64, strided))
    yield Probe("apply_rotary transposed", rotary((3, 8, 8), 2, 1.0, F64, transposed))
    for config in [(4, 4, 2, 0, 5), (4, 2, 1, 3, 1), (4, 1, 2, 4, 3), (6, 3, 1, 0, 1),
                   (2, 1, 3, 6, 2)]:
        for dtype in (F64, F32):
            yield Probe(f"CausalSelfAttention heads/kv heads/B/cached/new {config} {dtype}",
                        attention(*config, dtype))
    for config in [(13, 24, 4, 2, 2, 2, 0, 6), (9, 16, 2, 1, 1, 1, 5, 1),
                   (17, 24, 6, 3, 3, 3, 4, 3)]:
        for dtype in (F64, F32):
            yield Probe(f"TinyGPT {config} {dtype}", model(*config, dtype))
    for config in [(13, 16, 4, 2, 2, 3, 4, 10), (7, 8, 2, 1, 1, 2, 1, 8),
                   (17, 24, 6, 3, 2, 2, 5, 9)]:
        for dtype in (F64, F32):
            yield Probe(f"generate {config} {dtype}", generate(*config, dtype))


PROBES = {
    "soft_select": soft_select_probes,
    "by_hand": by_hand_probes,
    "self_attention": self_attention_probes,
    "rnn_attention": rnn_attention_probes,
    "transformer": transformer_probes,
    "efficient_attention": efficient_attention_probes,
    "tiny_gpt": tiny_gpt_probes,
}


def probes(assignment: str) -> list[Probe]:
    if assignment not in PROBES:
        raise ValueError(f"no probes for assignment {assignment!r}: add them to "
                         "tests/mutants/regimes.py")
    return list(PROBES[assignment]())
