"""solutions.efficient: the online softmax, tiled attention and the KV cache compute exactly
what the plain versions compute (float64 against PyTorch's own), on any device."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import solutions
from solutions import efficient


@pytest.mark.parametrize("block", [1, 3, 8, 50])
@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_online_softmax_equals_softmax(gen, block, scale):
    x = torch.randn(3, 4, 17, generator=gen, dtype=torch.float64) * scale
    p, m, l = efficient.online_softmax(x, block)
    torch.testing.assert_close(p, torch.softmax(x, dim=-1))
    torch.testing.assert_close(m, x.amax(dim=-1, keepdim=True))
    torch.testing.assert_close(l, torch.exp(x - m).sum(dim=-1, keepdim=True))


def test_online_softmax_survives_scores_that_overflow_exp():
    x = torch.tensor([[1000.0, 999.0, -1000.0, 998.0, 1001.0]])  # float32: exp(89) is inf
    p, _, _ = efficient.online_softmax(x, block=2)
    assert torch.isfinite(p).all()
    torch.testing.assert_close(p, torch.softmax(x, dim=-1))


SHAPES = [((2, 3), 40, 40, 8, 8), ((1,), 33, 70, 16, 5), ((), 7, 7, 4, 4), ((2,), 64, 64, 8, 3)]


# causal attention only for self-attention (L = S): there the masks of both sides agree
CASES = [(*shape, causal) for shape in SHAPES for causal in (False, True)
         if not causal or shape[1] == shape[2]]


@pytest.mark.parametrize("batch, L, S, d, d_v, is_causal", CASES)
@pytest.mark.parametrize("blocks", [(16, 16), (5, 7), (64, 1), (100, 100)])
def test_tiled_attention_equals_torch_sdpa(gen, batch, L, S, d, d_v, blocks, is_causal):
    q = torch.randn(*batch, L, d, generator=gen, dtype=torch.float64) * 3
    k = torch.randn(*batch, S, d, generator=gen, dtype=torch.float64) * 3
    v = torch.randn(*batch, S, d_v, generator=gen, dtype=torch.float64)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    torch.testing.assert_close(efficient.tiled_attention(q, k, v, *blocks, is_causal=is_causal),
                               expected)


def test_causal_tiles_use_the_boolean_convention(gen):
    """True = may attend: the same as a boolean attn_mask built from solutions.causal_mask."""
    q, k, v = (torch.randn(2, 12, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    mask = solutions.causal_mask(12)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(efficient.tiled_attention(q, k, v, 5, 3, is_causal=True), expected)


class _CountTiles(TorchDispatchMode):
    """Counts the matrix products whose result is one (8, 8) tile of scores."""

    def __init__(self):
        super().__init__()
        self.tiles = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.tiles += func in (torch.ops.aten.mm.default, torch.ops.aten.bmm.default) and \
            tuple(out.shape[-2:]) == (8, 8)
        return out


def test_causal_tiled_attention_skips_the_hidden_tiles(gen):
    """With blocks of 8 over 64 positions, 28 of the 64 tiles lie above the diagonal."""
    q, k = (torch.randn(64, 4, generator=gen, dtype=torch.float64) for _ in range(2))
    v = torch.randn(64, 2, generator=gen, dtype=torch.float64)  # p @ v is (8, 2), not a tile
    tiles = {}
    for causal in (False, True):
        with _CountTiles() as counter:
            efficient.tiled_attention(q, k, v, 8, 8, is_causal=causal)
        tiles[causal] = counter.tiles
    assert tiles == {False: 64, True: 64 - 28}


def test_tiled_attention_keeps_gradients(gen):
    q, k, v = (torch.randn(2, 9, 4, generator=gen, dtype=torch.float64, requires_grad=True)
               for _ in range(3))
    assert torch.autograd.gradcheck(
        lambda q, k, v: efficient.tiled_attention(q, k, v, 4, 3, is_causal=True), (q, k, v))


def test_kv_cache_grows_by_the_appended_positions():
    cache = efficient.KVCache()
    assert len(cache) == 0
    k1, v1 = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4, 8)
    k, v = cache.append(k1, v1)
    assert torch.equal(k, k1) and torch.equal(v, v1) and len(cache) == 4
    k2, v2 = torch.randn(2, 3, 1, 8), torch.randn(2, 3, 1, 8)
    k, v = cache.append(k2, v2)
    assert k.shape == (2, 3, 5, 8) and torch.equal(k[..., 4:, :], k2)
    assert torch.equal(v[..., :4, :], v1)


def small_lm(dtype=torch.float32, device="cpu"):
    torch.manual_seed(0)
    return solutions.DecoderOnlyLM(vocab=13, d_model=16, n_head=4, d_ff=32, n_layer=2,
                                   max_len=24).to(device=device, dtype=dtype).eval()


def test_decode_step_gives_the_full_forwards_logits():
    model = small_lm(torch.float64)
    idx = torch.randint(0, 13, (3, 10), generator=torch.Generator().manual_seed(1))
    caches = [efficient.KVCache() for _ in model.blocks]
    full = model(idx)  # (3, 10, 13)
    for t in range(10):
        logits = efficient.decode_step(model, idx[:, t:t + 1], t, caches)
        torch.testing.assert_close(logits, full[:, t])
    assert [len(c) for c in caches] == [10, 10]


def test_generate_cached_is_token_identical_to_recomputation():
    model = small_lm()
    idx = torch.randint(0, 13, (4, 3), generator=torch.Generator().manual_seed(2))
    cached = efficient.generate_cached(model, idx, n_new=21)  # fills max_len = 24 exactly
    assert cached.shape == (4, 24)
    assert torch.equal(cached, model.greedy_generate(idx, 21))


def test_everything_stays_on_the_inputs_device():
    q, k, v = (torch.randn(1, 2, 10, 4, device="meta") for _ in range(3))
    assert efficient.tiled_attention(q, k, v, 4, 4, is_causal=True).device.type == "meta"
    p, m, l = efficient.online_softmax(q, 3)
    assert {p.device.type, m.device.type, l.device.type} == {"meta"}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(gen):
    q, k, v = (torch.randn(2, 2, 50, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    for is_causal in (False, True):
        cpu = efficient.tiled_attention(q, k, v, 16, 8, is_causal=is_causal)
        cuda = efficient.tiled_attention(q.cuda(), k.cuda(), v.cuda(), 16, 8, is_causal=is_causal)
        assert cuda.device.type == "cuda"
        torch.testing.assert_close(cuda.cpu(), cpu)
        torch.testing.assert_close(cuda, F.scaled_dot_product_attention(
            q.cuda(), k.cuda(), v.cuda(), is_causal=is_causal))
    p, m, l = efficient.online_softmax(q.cuda() * 100, 7)
    torch.testing.assert_close(p.cpu(), torch.softmax(q * 100, dim=-1))
    model = small_lm(device="cuda")
    idx = torch.randint(0, 13, (2, 4), generator=gen).cuda()
    assert torch.equal(efficient.generate_cached(model, idx, 12), model.greedy_generate(idx, 12))
    assert math.isfinite(float(l.sum()))
