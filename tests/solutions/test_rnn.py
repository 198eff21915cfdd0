"""GRU encoder-decoder with and without attention."""

import pytest
import torch
import torch.nn.functional as F

from solutions import AttentionDecoder, Encoder, Seq2Seq, padding_mask

V, E, HID, ATT = 12, 8, 16, 10
BOS, PAD = 1, 0


def _model(use_attention=True):
    return Seq2Seq(Encoder(V, E, HID), AttentionDecoder(V, E, HID, ATT, use_attention), bos=BOS)


def _batch(gen, B=3, S=6, T=5):
    lengths = torch.tensor([6, 3, 1])[:B]
    src_mask = padding_mask(lengths, S)  # (B, S)
    src = torch.randint(2, V, (B, S), generator=gen).masked_fill(~src_mask, PAD)
    tgt_in = torch.randint(2, V, (B, T), generator=gen)
    tgt_in[:, 0] = BOS
    return src, src_mask, tgt_in


def test_encoder_final_state_ignores_padding(gen):
    """With lengths, h is the state after each sequence's last real token: the same as running
    the GRU on the unpadded sequence alone."""
    enc = Encoder(V, E, HID)
    src, src_mask, _ = _batch(gen)
    lengths = src_mask.sum(-1)
    outputs, h = enc(src, lengths)
    assert outputs.shape == (3, 6, HID) and h.shape == (1, 3, HID)
    for b in range(3):
        _, h_b = enc(src[b:b + 1, : lengths[b]])
        torch.testing.assert_close(h[:, b], h_b[:, 0])
    _, h_all = enc(src)  # without lengths: the state after the padding too
    assert not torch.allclose(h_all[:, 2], h[:, 2])


@pytest.mark.parametrize("use_attention", [True, False])
def test_shapes_masking_and_stepping(use_attention, gen):
    model = _model(use_attention).eval()
    src, src_mask, tgt_in = _batch(gen)
    logits, att = model(src, src_mask, tgt_in)
    assert logits.shape == (3, 5, V) and att.shape == (3, 5, 6)
    torch.testing.assert_close(att.sum(-1), torch.ones(3, 5))
    assert (att[~src_mask[:, None, :].expand_as(att)] == 0).all()  # exactly zero on padding

    # teacher-forced forward == stepping the decoder by hand
    enc_out, h = model.encode(src, src_mask)
    for t in range(5):
        step_logits, h, step_att = model.decoder.step(tgt_in[:, t], h, enc_out, src_mask)
        torch.testing.assert_close(step_logits, logits[:, t])
        torch.testing.assert_close(step_att, att[:, t])

    # padding tokens in the source change nothing
    src2 = src.masked_fill(~src_mask, 5)
    torch.testing.assert_close(model(src2, src_mask, tgt_in)[0], logits)


def test_attention_moves_bottleneck_does_not(gen):
    src, src_mask, tgt_in = _batch(gen)
    _, att = _model(use_attention=True)(src, src_mask, tgt_in)
    assert (att[0] > 0).all()  # soft weights on every real token
    _, att = _model(use_attention=False)(src, src_mask, tgt_in)
    last = src_mask.sum(-1) - 1
    expected = F.one_hot(last, 6).float()[:, None, :].expand(3, 5, 6)
    assert torch.equal(att, expected)  # always the encoder's final state


def test_no_attention_context_is_encoder_state(gen):
    """The bottleneck decoder's context is the encoder's final hidden state."""
    model = _model(use_attention=False)
    src, src_mask, tgt_in = _batch(gen)
    enc_out, h = model.encode(src, src_mask)
    dec = model.decoder
    logits, h1, _ = dec.step(tgt_in[:, 0], h, enc_out, src_mask)
    context = h  # the initial decoder state is the encoder's final state too
    h_ref = dec.cell(torch.cat([dec.emb(tgt_in[:, 0]), context], -1), h)
    torch.testing.assert_close(h1, h_ref)
    torch.testing.assert_close(logits, dec.out(torch.cat([h_ref, context], -1)))


def test_step_without_mask_attends_everywhere(gen):
    dec = AttentionDecoder(V, E, HID, ATT)
    enc_out = torch.randn(2, 4, HID, generator=gen)
    h = torch.randn(2, HID, generator=gen)
    y = torch.tensor([BOS, BOS])
    logits, h1, att = dec.step(y, h, enc_out)
    full = torch.ones(2, 4, dtype=torch.bool)
    torch.testing.assert_close(att, dec.step(y, h, enc_out, full)[2])
    assert logits.shape == (2, V) and h1.shape == (2, HID) and (att > 0).all()


@pytest.mark.parametrize("use_attention", [True, False])
def test_greedy(use_attention, gen):
    model = _model(use_attention).eval()
    src, src_mask, _ = _batch(gen)
    tokens, att = model.greedy(src, src_mask, max_len=4)
    assert tokens.shape == (3, 4) and tokens.dtype == torch.long and att.shape == (3, 4, 6)
    # feeding its own output back with teacher forcing reproduces the same choices
    tgt_in = torch.cat([torch.full((3, 1), BOS), tokens[:, :-1]], dim=1)
    logits, att_tf = model(src, src_mask, tgt_in)
    assert torch.equal(logits.argmax(-1), tokens)
    torch.testing.assert_close(att_tf, att)


def test_overfits_reversal(gen, train_losses):
    """A few dozen Adam steps on one fixed batch of 'reverse the sequence' cut the loss."""
    torch.manual_seed(0)
    model = _model(use_attention=True)
    src, src_mask, _ = _batch(gen, B=3, S=6)
    lengths = src_mask.sum(-1)
    target = torch.full((3, 6), PAD)
    for b in range(3):
        target[b, : lengths[b]] = src[b, : lengths[b]].flip(0)
    tgt_in = torch.cat([torch.full((3, 1), BOS), target[:, :-1]], dim=1)

    def loss():
        logits, _ = model(src, src_mask, tgt_in)
        return F.cross_entropy(logits.reshape(-1, V), target.reshape(-1))

    losses = train_losses(model.parameters(), loss)
    assert losses[-1] < 0.3 * losses[0]
