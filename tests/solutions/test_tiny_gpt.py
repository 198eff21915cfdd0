"""The capstone's reference (solutions.tiny_gpt) against PyTorch's own pieces, in float64: its
attention against F.scaled_dot_product_attention with grouped heads on rotated queries and keys,
reading with a cache against reading at once, cached generation against recomputation, and the
mistakes the hidden tests name, each a different function from the reference."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from solutions import apply_rotary, mistakes, tiny_gpt

F64 = torch.float64


def model(vocab=13, d_model=24, n_head=4, n_kv_head=2, n_layer=2, seed=0):
    torch.manual_seed(seed)
    gpt = tiny_gpt.TinyGPT(vocab, d_model, n_head, n_kv_head, 2 * d_model, n_layer).to(F64)
    with torch.no_grad():  # norms away from ones, so that a swap of them would show
        for p in gpt.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return gpt.eval()


@pytest.mark.parametrize("n_head,n_kv_head", [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_attention_is_pytorchs_grouped_attention_on_rotated_queries_and_keys(n_head, n_kv_head):
    torch.manual_seed(1)
    attn = tiny_gpt.CausalSelfAttention(24, n_head, n_kv_head).to(F64)
    x = torch.randn(2, 7, 24, dtype=F64)
    y, k, v = attn(x)
    q = apply_rotary(attn.heads(attn.q_proj(x), n_head))
    k_ref = apply_rotary(attn.heads(attn.k_proj(x), n_kv_head))
    v_ref = attn.heads(attn.v_proj(x), n_kv_head)
    expected = F.scaled_dot_product_attention(q, k_ref, v_ref, is_causal=True,
                                              enable_gqa=True)          # (B, n_head, T, d)
    expected = attn.out_proj(expected.transpose(1, 2).reshape(2, 7, 24))
    torch.testing.assert_close(y, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(k, k_ref)
    torch.testing.assert_close(v, v_ref)


def test_rotary_at_turns_positions_after_the_start():
    x = torch.randn(2, 3, 5, 8, dtype=F64)
    whole = tiny_gpt.rotary_at(torch.cat([torch.zeros(2, 3, 4, 8, dtype=F64), x], dim=2))
    torch.testing.assert_close(tiny_gpt.rotary_at(x, 4), whole[:, :, 4:])


@pytest.mark.parametrize("split", [1, 3, 6])
def test_reading_in_parts_with_the_caches_equals_reading_at_once(split):
    gpt = model()
    idx = torch.randint(0, 13, (3, 7), generator=torch.Generator().manual_seed(2))
    whole, k_all, v_all = gpt(idx)
    first, k1, v1 = gpt(idx[:, :split])
    rest, k2, v2 = gpt(idx[:, split:], k1, v1)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), whole)
    torch.testing.assert_close(k2, k_all)
    torch.testing.assert_close(v2, v_all)
    assert k_all.shape == (2, 3, 2, 7, 6)  # (n_layer, B, n_kv_head, T, d_head)


def test_the_model_is_causal():
    gpt = model()
    idx = torch.randint(0, 13, (2, 9), generator=torch.Generator().manual_seed(3))
    changed = idx.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 13
    torch.testing.assert_close(gpt(changed)[0][:, :5], gpt(idx)[0][:, :5])
    assert not torch.allclose(gpt(changed)[0][:, 5:], gpt(idx)[0][:, 5:])


def test_cached_generation_chooses_the_tokens_of_recomputation():
    gpt = model(n_kv_head=1)
    prompt = torch.randint(0, 13, (4, 3), generator=torch.Generator().manual_seed(4))
    tokens = tiny_gpt.generate(gpt, prompt, 15)
    assert tokens.shape == (4, 18)
    assert torch.equal(tokens, tiny_gpt.generate_recompute(gpt, prompt, 15))


def test_each_mistake_the_hidden_tests_name_is_another_function():
    """A cause is named when its variant reproduces a student's outputs: each variant must
    differ from the reference on the inputs the hidden tests use (a cache, several heads)."""
    x = torch.randn(2, 3, 8, dtype=F64)
    for cause, out in mistakes.rotary(x, 5).items():
        assert not torch.allclose(out, tiny_gpt.rotary_at(x, 5)), cause
    torch.manual_seed(5)
    attn = tiny_gpt.CausalSelfAttention(24, 4, 2).to(F64)
    x = torch.randn(2, 3, 24, dtype=F64)
    past = (torch.randn(2, 2, 4, 6, dtype=F64), torch.randn(2, 2, 4, 6, dtype=F64))
    y = attn(x, *past)[0]
    for cause, (out, _, _) in mistakes.tiny_gpt_attention(attn, x, *past).items():
        assert not torch.allclose(out, y), cause
    gpt = model()
    prompt = torch.randint(0, 13, (3, 2), generator=torch.Generator().manual_seed(6))
    right = tiny_gpt.generate(gpt, prompt, 12)
    for cause, tokens in mistakes.tiny_gpt_generate(gpt, prompt, 12).items():
        if cause != "gqa_heads_tiled":  # (tokens can agree; the outputs above do not)
            assert not torch.equal(tokens, right), cause


def test_runs_on_the_meta_device():
    gpt = tiny_gpt.TinyGPT(11, 16, 4, 2, 24, 2).to("meta")
    idx = torch.zeros(2, 5, dtype=torch.long, device="meta")
    logits, k, v = gpt(idx)
    assert logits.device.type == k.device.type == "meta" and logits.shape == (2, 5, 11)
    more, k, v = gpt(idx[:, :1], k, v)
    assert k.shape == (2, 2, 2, 6, 4)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_as_on_the_cpu():
    gpt = model()
    idx = torch.randint(0, 13, (2, 6), generator=torch.Generator().manual_seed(7))
    cpu = gpt(idx)[0]
    torch.testing.assert_close(gpt.to("cuda")(idx.to("cuda"))[0].cpu(), cpu)
    assert torch.equal(tiny_gpt.generate(gpt, idx.to("cuda"), 8).cpu(),
                       tiny_gpt.generate(gpt.cpu(), idx, 8))
