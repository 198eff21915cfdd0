"""Attention over a CNN feature grid (Show, Attend and Tell)."""

import pytest
import torch
import torch.nn.functional as F

from solutions import CaptionDecoder, GridEncoder

V, E, FEAT, HID, ATT = 10, 8, 12, 16, 10
BOS = 1


def _images(gen, B=2, H=32, W=32):
    return torch.randn(B, 3, H, W, generator=gen)


def test_grid_encoder_shapes(gen):
    enc = GridEncoder(3, FEAT)
    images = _images(gen)
    features, grid = enc(images)
    assert features.shape == (2, 16, FEAT) and grid == (4, 4)
    raw = enc.net(images)  # (B, F, h, w)
    torch.testing.assert_close(features[0, 1 * 4 + 3], raw[0, :, 1, 3])  # row r * w + c = (r, c)
    features, grid = enc(_images(gen, H=32, W=16))
    assert features.shape == (2, 8, FEAT) and grid == (4, 2)


def test_decoder_shapes_and_stepping(gen):
    enc, dec = GridEncoder(3, FEAT), CaptionDecoder(V, E, FEAT, HID, ATT)
    features, _ = enc(_images(gen))
    tgt_in = torch.randint(0, V, (2, 5), generator=gen)
    logits, att = dec(features, tgt_in)
    assert logits.shape == (2, 5, V) and att.shape == (2, 5, 16)
    torch.testing.assert_close(att.sum(-1), torch.ones(2, 5))
    assert (att >= 0).all()

    h = dec.init_hidden(features)
    torch.testing.assert_close(h, torch.tanh(dec.init_h(features.mean(1))))
    for t in range(5):
        step_logits, h, step_att = dec.step(tgt_in[:, t], h, features)
        torch.testing.assert_close(step_logits, logits[:, t])
        torch.testing.assert_close(step_att, att[:, t])


def test_greedy(gen):
    enc, dec = GridEncoder(3, FEAT), CaptionDecoder(V, E, FEAT, HID, ATT)
    features, grid = enc(_images(gen, H=32, W=16))
    tokens, att = dec.greedy(features, BOS, max_len=4, grid_size=grid)
    assert tokens.shape == (2, 4) and att.shape == (2, 4, 4, 2)
    torch.testing.assert_close(att.sum((-2, -1)), torch.ones(2, 4))
    tgt_in = torch.cat([torch.full((2, 1), BOS), tokens[:, :-1]], dim=1)
    logits, att_tf = dec(features, tgt_in)
    assert torch.equal(logits.argmax(-1), tokens)
    torch.testing.assert_close(att_tf.view(2, 4, 4, 2), att)  # cell n is (n // w, n % w)
    with pytest.raises(ValueError, match="grid_size"):
        dec.greedy(features, BOS, max_len=2)  # 8 cells: not a square
    square, _ = enc(_images(gen))
    assert dec.greedy(square, BOS, max_len=3)[1].shape == (2, 3, 4, 4)


def test_overfits_captions(gen, train_losses):
    torch.manual_seed(0)
    enc, dec = GridEncoder(3, FEAT), CaptionDecoder(V, E, FEAT, HID, ATT)
    images = _images(gen, B=4)
    captions = torch.randint(2, V, (4, 5), generator=gen)
    tgt_in = torch.cat([torch.full((4, 1), BOS), captions[:, :-1]], dim=1)
    params = list(enc.parameters()) + list(dec.parameters())

    def loss():
        features, _ = enc(images)
        logits, _ = dec(features, tgt_in)
        return F.cross_entropy(logits.reshape(-1, V), captions.reshape(-1))

    losses = train_losses(params, loss)
    assert losses[-1] < 0.3 * losses[0]
