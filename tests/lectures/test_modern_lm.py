"""The small decoder of lecture 10.7 (lectures/toolkit/modern_lm.py): shapes, causality, relative
positions, grouped-query attention and windows."""

import pytest
import torch
import torch.nn.functional as F

import solutions
from lectures.toolkit.modern_lm import (
    POSITIONS,
    ModernLM,
    alibi_slopes,
    kv_cache_bytes_per_token,
    loss_per_position,
)

VOCAB, T = 11, 12


def make(seed=0, **options):
    torch.manual_seed(seed)
    options = {"position": "rotary", **options}
    return ModernLM(VOCAB, d_model=16, n_head=4, n_layer=2, max_len=T, **options).double()


def tokens(B=3, length=T, seed=1):
    return torch.randint(0, VOCAB, (B, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("position", POSITIONS)
def test_each_position_gives_logits_for_every_token(position):
    assert make(position=position)(tokens()).shape == (3, T, VOCAB)


def test_linear_attention_and_windows_give_logits_too():
    assert make(position="none", attention="linear")(tokens()).shape == (3, T, VOCAB)
    assert make(window=3)(tokens()).shape == (3, T, VOCAB)


@pytest.mark.parametrize("options", [{"position": p} for p in POSITIONS]
                         + [{"window": 3}, {"n_kv_head": 1},
                            {"position": "none", "attention": "linear"}])
def test_a_future_token_never_changes_earlier_logits(options):
    model, x = make(**options), tokens()
    with torch.no_grad():
        before = model(x)
        for t in (0, 5, T - 1):
            changed = x.clone()
            changed[:, t] = (changed[:, t] + 1) % VOCAB
            after = model(changed)
            torch.testing.assert_close(after[:, :t], before[:, :t])   # the past: the same
            assert not torch.allclose(after[:, t], before[:, t])       # the token itself: read


def first_layer_scores(model, x):
    block = model.blocks[0]
    h = model.tok_emb(x)
    if model.position == "learned":
        h = h + model.pos_emb(torch.arange(x.size(1)))
    elif model.position == "sinusoidal":
        h = h + solutions.sinusoidal_encoding(x.size(1), model.d_model, dtype=h.dtype)
    q, k, _ = block.attn.qkv(block.norm1(h))
    return block.attn.scores(q, k)                               # (B, n_head, T, T)


@pytest.mark.parametrize("position", ["rotary", "alibi"])
def test_relative_positions_see_only_offsets(position):
    """The same 8 tokens at positions 0..7 and, inside a longer sequence, at 5..12: the scores
    among them are the same. With added positions they are not (the control)."""
    model, x = make(position=position), tokens(length=8)
    longer = torch.cat([tokens(length=5, seed=9), x], dim=1)     # (B, 13): x shifted by 5
    with torch.no_grad():
        short = first_layer_scores(model, x)
        shifted = first_layer_scores(model, longer)[..., 5:, 5:]   # x's rows and columns
    torch.testing.assert_close(shifted, short)
    control = make(position="sinusoidal")
    with torch.no_grad():
        moved = first_layer_scores(control, longer)[..., 5:, 5:]
        assert not torch.allclose(moved, first_layer_scores(control, x))


def test_alibi_slopes_follow_the_paper():
    torch.testing.assert_close(alibi_slopes(8), 0.5 ** torch.arange(1.0, 9.0))
    torch.testing.assert_close(alibi_slopes(4), 0.25 ** torch.arange(1.0, 5.0))


def test_alibi_penalises_distance_linearly():
    model, x = make(position="alibi"), tokens()
    block = model.blocks[0]
    with torch.no_grad():
        q, k, _ = block.attn.qkv(block.norm1(model.tok_emb(x)))
        plain = q @ k.transpose(-2, -1) / block.attn.d_head ** 0.5
        biased = block.attn.scores(q, k)
    i, j = 7, 2
    torch.testing.assert_close(biased[..., i, j] - plain[..., i, j],
                               -(i - j) * alibi_slopes(4).double().expand(3, 4))


@pytest.mark.parametrize("position", ["learned", "rotary"])
def test_as_many_kv_heads_as_query_heads_is_multi_head_attention(position):
    model = make(position=position, n_kv_head=4)
    attn = model.blocks[0].attn
    x = torch.randn(3, T, 16, dtype=torch.float64)
    if position == "learned":     # no rotation: the plain multi-head layer of lecture 5
        reference = solutions.MultiHeadAttention(16, 4, bias=False).double()
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            getattr(reference, name).load_state_dict(getattr(attn, name).state_dict())
        want = reference(x, is_causal=True)[0]
    else:
        reference = solutions.GroupedQueryAttention(16, 4, 4, rotary=True).double()
        reference.load_state_dict(attn.state_dict())
        want = reference(x, is_causal=True)[0]
    with torch.no_grad():
        torch.testing.assert_close(attn(x), want)


def test_fewer_kv_heads_shrink_the_cache_not_the_queries():
    full, grouped, single = (make(n_kv_head=n) for n in (4, 2, 1))
    assert kv_cache_bytes_per_token(full) == 2 * kv_cache_bytes_per_token(grouped) \
        == 4 * kv_cache_bytes_per_token(single) == 2 * 2 * 16 * 4   # 2 layers, k and v, fp32
    with torch.no_grad():
        assert not torch.allclose(single(tokens()), full(tokens()))


@pytest.mark.parametrize("position", ["rotary", "alibi", "learned"])
def test_a_window_of_at_least_T_is_full_causal_attention(position):
    model, x = make(position=position), tokens()
    with torch.no_grad():
        full = model(x)
        for window in (T, T + 5):
            model.window = window
            torch.testing.assert_close(model(x), full)
        model.window = 3
        assert not torch.allclose(model(x)[:, 3:], full[:, 3:])   # a narrower one is not
        torch.testing.assert_close(model(x)[:, :3], full[:, :3])  # except where it sees all


def test_learned_positions_stop_at_their_table_and_the_others_do_not():
    with torch.no_grad():
        with pytest.raises(ValueError, match="max_len"):
            make(position="learned")(tokens(length=T + 1))
        for position in ("sinusoidal", "rotary", "alibi", "none"):
            assert make(position=position)(tokens(length=3 * T)).shape == (3, 3 * T, VOCAB)


def test_linear_attention_refuses_what_it_cannot_do():
    with pytest.raises(ValueError):
        make(position="alibi", attention="linear")
    with pytest.raises(ValueError):
        make(position="none", attention="linear", window=4)


def test_loss_per_position_is_the_cross_entropy_at_each_position():
    model = make().float()
    data = torch.randint(0, VOCAB, (500,), generator=torch.Generator().manual_seed(3))
    curve = loss_per_position(model, data, T, windows=16, seed=5)
    g = torch.Generator().manual_seed(5)
    starts = torch.randint(0, len(data) - T - 1, (16,), generator=g)
    with torch.no_grad():
        for t in (0, T - 1):
            logits = model(torch.stack([data[s:s + T] for s in starts]))[:, t]
            want = torch.nn.functional.cross_entropy(logits, data[starts + t + 1])
            torch.testing.assert_close(curve[t], want)


@pytest.mark.parametrize("n_kv_head", [2, 1])
def test_shared_kv_heads_are_the_reference_grouped_query_attention(n_kv_head):
    attn = make(n_kv_head=n_kv_head).blocks[1].attn
    reference = solutions.GroupedQueryAttention(16, 4, n_kv_head, rotary=True).double()
    reference.load_state_dict(attn.state_dict())
    x = torch.randn(3, T, 16, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(attn(x), reference(x, is_causal=True)[0])


def test_the_gpt2_block_is_layernorm_and_a_gelu_mlp_at_about_the_same_size():
    modern = ModernLM(VOCAB, 48, 4, 2, 16)
    classic = ModernLM(VOCAB, 48, 4, 2, 16, block="layernorm-gelu")
    block = classic.blocks[0]
    assert isinstance(block.norm1, solutions.LayerNorm) and isinstance(classic.norm,
                                                                        solutions.LayerNorm)
    assert isinstance(block.mlp, solutions.MLP) and block.mlp.activation == "gelu"
    assert isinstance(modern.blocks[0].mlp, solutions.SwiGLU)
    x = torch.randn(3, 48)
    torch.testing.assert_close(block.mlp(x), block.mlp.linear2(F.gelu(block.mlp.linear1(x))))
    n_modern, n_classic = (sum(p.numel() for p in m.parameters()) for m in (modern, classic))
    assert abs(n_modern - n_classic) < 0.02 * n_classic, (n_modern, n_classic)
    assert classic(torch.randint(0, VOCAB, (2, 7))).shape == (2, 7, VOCAB)
    with pytest.raises(ValueError, match="block="):
        ModernLM(VOCAB, 48, 4, 2, 16, block="postnorm")


def test_the_strided_pattern_splits_the_heads_between_window_and_stride():
    model = make(position="alibi")
    attn = model.blocks[0].attn
    x = torch.randn(2, T, 16, dtype=torch.float64)
    q, k, _ = attn.qkv(x)
    readable = attn.scores(q, k, ("strided", 3)).isfinite()[0]      # (n_head, T, T)
    assert torch.equal(readable[0], solutions.sliding_window_mask(T, 3))
    assert torch.equal(readable[1], solutions.sliding_window_mask(T, 3))
    assert torch.equal(readable[2], solutions.strided_mask(T, 3))
    assert torch.equal(readable[3], solutions.strided_mask(T, 3))
    model.window = ("strided", 3)
    idx = tokens()
    changed = idx.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % VOCAB
    torch.testing.assert_close(model(changed)[:, :7], model(idx)[:, :7])   # still causal
