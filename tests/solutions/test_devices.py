"""Every public function and module of `solutions` runs on any device and in any float dtype.

A case prepares its inputs and modules on a device, then returns a thunk that runs the forward.
Three checks use them:

1. meta: inputs and modules on the `meta` device (shapes only, no data); every output must be
   on meta too. A tensor created on a fixed device inside a function shows up here.
2. device mix: everything on CPU, but the thunk runs under torch.set_default_device("meta").
   A tensor created inside a function without `device=` then lands on meta, and the first op
   that mixes it with the CPU inputs raises.
3. cuda: the same forward on CUDA matches CPU (skipped without a CUDA device).

Checks 1 and 2 also run under `SameDevice`, which fails any torch call whose tensor arguments
sit on different devices: PyTorch itself lets a few such calls through (an embedding lookup
with weights on CPU and indices on meta returns a CPU tensor), and a real GPU would not.

Plus float32 and float64 runs: floating outputs keep the input dtype.
nn.GRU / nn.GRUCell, Conv2d and Embedding all have meta kernels in this PyTorch, so the
recurrent and captioning models are covered by every check.
"""

import contextlib

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

import solutions as S

B, L, T, D, V = 2, 3, 5, 8, 7


class Case:
    """Inputs drawn on CPU from a seeded generator, then moved: every device gets the same.
    Everything is made before the thunk runs, outside check 2's default-device switch."""

    def __init__(self, device, dtype):
        self.device, self.dtype = device, dtype
        self.gen = torch.Generator().manual_seed(0)

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.gen, dtype=self.dtype).to(self.device)

    def randint(self, high, *shape):
        return torch.randint(1, high, shape, generator=self.gen).to(self.device)

    def lengths(self, *values):
        return torch.tensor(values).to(self.device)

    def pad(self, *lengths, max_len=T):
        return S.padding_mask(torch.tensor(lengths), max_len).to(self.device)

    def module(self, module):
        torch.manual_seed(0)  # built on CPU, the same weights on every device
        return module.to(device=self.device, dtype=self.dtype).eval()


CASES = {}


def case(name):
    def register(build):
        CASES[name] = build
        return build
    return register


@case("causal_mask")
def _(c):
    return lambda: S.causal_mask(L, T, device=c.device)


@case("padding_mask")
def _(c):
    lengths = c.lengths(5, 2)
    return lambda: S.padding_mask(lengths, max_len=T)


@case("padding_mask.no_max_len")  # reads lengths.max(): needs data, so not on meta
def _(c):
    lengths = c.lengths(5, 2)
    return lambda: S.padding_mask(lengths)


@case("masked_softmax")
def _(c):
    scores, mask = c.randn(B, L, T), c.pad(5, 0)[:, None, :]  # batch 1: fully masked rows
    return lambda: S.masked_softmax(scores, mask)


@case("dot_score")
def _(c):
    q, k = c.randn(B, L, D), c.randn(B, T, D)
    return lambda: S.dot_score(q, k)


@case("scaled_dot_score")
def _(c):
    q, k = c.randn(B, L, D), c.randn(B, T, D)
    return lambda: S.scaled_dot_score(q, k)


@case("AdditiveScore")
def _(c):
    score, q, k = c.module(S.AdditiveScore(D, 4, 6)), c.randn(B, L, D), c.randn(B, T, 4)
    return lambda: score(q, k)


@case("attend")
def _(c):
    score = c.module(S.AdditiveScore(D, D, 6))
    q, k, v, mask = c.randn(B, L, D), c.randn(B, T, D), c.randn(B, T, 3), c.pad(5, 2)[:, None]
    return lambda: S.attend(q, k, v, score=score, mask=mask)


@case("general_attention")
def _(c):
    q, x = c.randn(B, L, D), c.randn(B, T, D)
    return lambda: S.general_attention(q, x)


@case("scaled_dot_product_attention")
def _(c):
    q, k, v, mask = c.randn(B, 2, T, D), c.randn(B, 2, T, D), c.randn(B, 2, T, 3), c.pad(5, 2)
    return lambda: S.scaled_dot_product_attention(q, k, v, mask[:, None, None], is_causal=True)


@case("SelfAttention")
def _(c):
    sa, x = c.module(S.SelfAttention(D, 4, 6, bias=True)), c.randn(B, T, D)
    mask = c.pad(5, 2)[:, None]
    return lambda: sa(x, mask=mask, is_causal=True)


@case("MultiHeadAttention")
def _(c):
    mha, x, mem = c.module(S.MultiHeadAttention(D, 2)), c.randn(B, L, D), c.randn(B, T, D)
    mask = c.pad(5, 2)[:, None]
    return lambda: mha(x, mem, mem, mask=mask, is_causal=True)


@case("hard_select")
def _(c):
    keys, values = c.randn(B, T, D), c.randn(B, T, 3)
    query = keys[:, [1, 0, 4]]
    return lambda: S.hard_select(query, keys, values)


@case("soft_select")
def _(c):
    q, k, v = c.randn(B, L, D), c.randn(B, T, D), c.randn(B, T, 3)
    return lambda: S.soft_select(q, k, v, temperature=0.5)


@case("gaussian_kernel_weights")
def _(c):
    xq, xk = c.randn(B, L), c.randn(B, T)
    return lambda: S.gaussian_kernel_weights(xq, xk, 0.5)


@case("nadaraya_watson")
def _(c):
    xq, xk, y = c.randn(L), c.randn(T), c.randn(T, 2)
    return lambda: S.nadaraya_watson(xq, xk, y, 0.5)


@case("sinusoidal_encoding")
def _(c):
    return lambda: S.sinusoidal_encoding(T, 7, device=c.device, dtype=c.dtype)


@case("SinusoidalPositionalEncoding")
def _(c):
    pe, x = c.module(S.SinusoidalPositionalEncoding(D, 16)), c.randn(B, T, D)
    return lambda: pe(x)


@case("LearnedPositionalEncoding")
def _(c):
    pe, x = c.module(S.LearnedPositionalEncoding(16, D)), c.randn(B, T, D)
    return lambda: pe(x)


@case("LayerNorm")
def _(c):
    ln, x = c.module(S.LayerNorm(D)), c.randn(B, T, D)
    return lambda: ln(x)


@case("MLP")
def _(c):
    mlp, x = c.module(S.MLP(D, 16, activation="gelu")), c.randn(B, T, D)
    return lambda: mlp(x)


@case("TransformerBlock")
def _(c):
    block, x, mask = c.module(S.TransformerBlock(D, 2, 16)), c.randn(B, T, D), c.pad(5, 2)
    return lambda: block(x, mask=mask[:, None], is_causal=True)


@case("TransformerEncoder")
def _(c):
    enc, x = c.module(S.TransformerEncoder(2, D, 2, 16, norm_first=True)), c.randn(B, T, D)
    mask = c.pad(5, 2)[:, None]
    return lambda: enc(x, mask=mask)


@case("DecoderBlock")
def _(c):
    block, x, mem = c.module(S.DecoderBlock(D, 2, 16)), c.randn(B, L, D), c.randn(B, T, D)
    mask = c.pad(5, 2)[:, None]
    return lambda: block(x, mem, memory_mask=mask)


@case("DecoderOnlyLM")
def _(c):
    lm, idx = c.module(S.DecoderOnlyLM(V, D, 2, 16, 2, max_len=6)), c.randint(V, B, 4)
    return lambda: lm(idx)


@case("DecoderOnlyLM.greedy_generate")
def _(c):
    lm, idx = c.module(S.DecoderOnlyLM(V, D, 2, 16, 2, max_len=6)), c.randint(V, B, 4)
    return lambda: lm.greedy_generate(idx, 4)


@case("Encoder")
def _(c):
    enc, src = c.module(S.Encoder(V, 6, D)), c.randint(V, B, T)
    lengths = c.lengths(5, 2)
    return lambda: enc(src, lengths)


@case("AttentionDecoder.step")
def _(c):
    dec = c.module(S.AttentionDecoder(V, 6, D, 5))
    y, h, enc_out = c.randint(V, B), c.randn(B, D), c.randn(B, T, D)
    mask = c.pad(5, 2)
    return lambda: dec.step(y, h, enc_out, mask)


def _seq2seq(c, use_attention):
    return c.module(S.Seq2Seq(S.Encoder(V, 6, D), S.AttentionDecoder(V, 6, D, 5, use_attention),
                              bos=1))


@case("Seq2Seq")
def _(c):
    model, src, tgt = _seq2seq(c, True), c.randint(V, B, T), c.randint(V, B, 4)
    mask = c.pad(5, 2)
    return lambda: model(src, mask, tgt)


@case("Seq2Seq.no_attention")
def _(c):
    model, src, tgt = _seq2seq(c, False), c.randint(V, B, T), c.randint(V, B, 4)
    mask = c.pad(5, 2)
    return lambda: model(src, mask, tgt)


@case("Seq2Seq.greedy")
def _(c):
    model, src = _seq2seq(c, True), c.randint(V, B, T)
    mask = c.pad(5, 2)
    return lambda: model.greedy(src, mask, 4)


@case("GridEncoder")
def _(c):
    enc, images = c.module(S.GridEncoder(3, D, width=4)), c.randn(B, 3, 16, 8)
    return lambda: enc(images)


@case("CaptionDecoder")
def _(c):
    dec, feats = c.module(S.CaptionDecoder(V, 6, D, 10, 5)), c.randn(B, 6, D)
    tgt = c.randint(V, B, 4)
    return lambda: dec(feats, tgt)


@case("CaptionDecoder.greedy")
def _(c):
    dec, feats = c.module(S.CaptionDecoder(V, 6, D, 10, 5)), c.randn(B, 6, D)
    return lambda: dec.greedy(feats, 1, 4, grid_size=(3, 2))


@case("sliding_window_mask")
def _(c):
    return lambda: S.sliding_window_mask(T, 2, device=c.device)


@case("strided_mask")
def _(c):
    return lambda: S.strided_mask(T, 2, device=c.device)


@case("rotary_angles")
def _(c):
    positions = torch.arange(T).to(device=c.device, dtype=c.dtype)
    return lambda: S.rotary_angles(positions, D)


@case("apply_rotary")
def _(c):
    x = c.randn(B, 2, T, D)
    return lambda: S.apply_rotary(x)


@case("GroupedQueryAttention")
def _(c):
    gqa, x = c.module(S.GroupedQueryAttention(D, 4, 2, rotary=True)), c.randn(B, T, D)
    return lambda: gqa(x, is_causal=True)


@case("linear_attention")
def _(c):
    q, k, v = c.randn(B, 2, T, D), c.randn(B, 2, T, D), c.randn(B, 2, T, 3)
    return lambda: S.linear_attention(q, k, v)


@case("linear_attention.causal")
def _(c):
    q, k, v = c.randn(B, 2, T, D), c.randn(B, 2, T, D), c.randn(B, 2, T, 3)
    return lambda: S.linear_attention(q, k, v, causal=True)


@case("RMSNorm")
def _(c):
    norm, x = c.module(S.RMSNorm(D)), c.randn(B, T, D)
    return lambda: norm(x)


@case("SwiGLU")
def _(c):
    mlp, x = c.module(S.SwiGLU(D, 12)), c.randn(B, T, D)
    return lambda: mlp(x)


NOT_ON_META = {"padding_mask.no_max_len": "int(lengths.max()) needs the data"}


def _tensors(out):
    """All tensors in a (nested) output."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [t for o in out for t in _tensors(o)]
    return []


class SameDevice(TorchFunctionMode):
    """Raise when one torch call gets tensors on several devices. 0-dim tensors are left out:
    PyTorch lets a CPU scalar tensor meet a tensor on any device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        devices = {t.device for t in flat if isinstance(t, torch.Tensor) and t.dim() > 0}
        if len(devices) > 1:
            raise RuntimeError(f"{getattr(func, '__name__', func)} mixes devices {devices}")
        return func(*args, **kwargs)


@contextlib.contextmanager
def default_device(device):
    previous = torch.get_default_device()
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(previous)


def test_every_public_name_is_covered():
    covered = {name.split(".")[0] for name in CASES}
    assert covered == set(S.__all__)


@pytest.mark.parametrize("name", sorted(set(CASES) - set(NOT_ON_META)))
def test_meta(name):
    run = CASES[name](Case("meta", torch.float32))
    with SameDevice():
        outputs = _tensors(run())
    assert outputs
    assert all(t.device.type == "meta" for t in outputs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_tensor_created_on_the_default_device(name):
    run = CASES[name](Case("cpu", torch.float32))  # modules and inputs on CPU
    with default_device("meta"), SameDevice():
        outputs = _tensors(run())
    assert torch.get_default_device().type == "cpu"
    assert all(t.device.type == "cpu" for t in outputs)


def test_device_mix_check_catches_a_missing_device():
    """The check above can fail: a tensor made without device= lands on meta and breaks."""
    def bad(x):
        return x + torch.arange(x.size(-1))  # no device=

    def bad_lookup(emb, x):
        return x + emb(torch.arange(x.size(-2)))  # no device=; PyTorch alone would not mind

    x, emb = torch.randn(2, 3), torch.nn.Embedding(4, 3)
    with default_device("meta"), pytest.raises((RuntimeError, NotImplementedError)):
        bad(x)
    with default_device("meta"), SameDevice(), pytest.raises(RuntimeError, match="mixes"):
        bad_lookup(emb, x)
    assert torch.get_default_device().type == "cpu"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dtype(name, dtype):
    outputs = _tensors(CASES[name](Case("cpu", dtype))())
    floats = [t for t in outputs if t.is_floating_point()]
    assert all(t.dtype == dtype for t in floats)
    assert all(torch.isfinite(t).all() for t in floats)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu(name):
    # float64: no TF32 shortcuts in matmuls or convolutions, so CPU and GPU agree closely
    cpu = _tensors(CASES[name](Case("cpu", torch.float64))())
    cuda = _tensors(CASES[name](Case("cuda", torch.float64))())
    assert len(cpu) == len(cuda)
    for a, b in zip(cpu, cuda, strict=True):
        assert b.device.type == "cuda"
        torch.testing.assert_close(b.cpu(), a)
