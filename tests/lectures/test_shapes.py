"""Synthetic captioning images: deterministic, and every caption describes what was drawn."""

import random

import matplotlib
import numpy as np
import pytest
import torch

from lectures.toolkit.shapes import (
    COLOURS,
    POSITIONS,
    SIZE,
    SLOTS,
    VOCAB,
    caption,
    draw,
    make_dataset,
    plot_caption_attention,
    random_scene,
    shape_mask,
    split,
    upsample_attention,
)
from lectures.toolkit.toy_translation import BOS, EOS, PAD
from solutions import GridEncoder

matplotlib.use("Agg")


def test_same_seed_same_images():
    a, _ = make_dataset(20, seed=5)
    b, _ = make_dataset(20, seed=5)
    c, _ = make_dataset(20, seed=6)
    assert torch.equal(a.images, b.images) and a.captions == b.captions
    assert not torch.equal(a.images, c.images)
    assert a.images.shape == (20, 3, SIZE, SIZE) and a.images.dtype == torch.float32


def test_shape_footprints_differ():
    """Same side, three different pixel counts: square > circle > triangle."""
    for side in (8, 9, 10):
        areas = [shape_mask(k, side).sum() for k in ("square", "circle", "triangle")]
        assert areas[0] == side * side and areas[0] > areas[1] > areas[2] > side * side / 3


def test_captions_match_the_drawn_shapes():
    """Read each slot of the image back: a shape of the caption's colour and footprint sits in
    the caption's position, and slots the caption does not mention are empty."""
    rng = random.Random(0)
    for _ in range(100):
        scene = random_scene(rng)
        image, words = draw(scene), caption(scene)
        assert len(words) == 3 * len(scene)
        described = {}
        for k in range(0, len(words), 3):
            colour, kind, where = words[k: k + 3]
            described[POSITIONS.index(where)] = (colour, kind)
        assert list(described) == sorted(described)  # left to right
        for s, (start, stop) in enumerate(SLOTS):
            region = image[:, :, start:stop]  # (3, SIZE, width)
            lit = region.max(axis=0) > 0
            if s not in described:
                assert not lit.any()
                continue
            colour, kind = described[s]
            pixels = region[:, lit].T  # (n, 3)
            assert np.allclose(pixels, COLOURS[colour])
            sh = next(sh for sh in scene if sh.slot == s)
            assert lit.sum() == shape_mask(kind, sh.side).sum()


def test_targets_are_shifted_captions():
    data, scenes = make_dataset(12, seed=0)
    assert len(scenes) == 12
    for b, words in enumerate(data.captions):
        n = len(words)
        assert VOCAB.decode(data.tgt_out[b]) == words and data.tgt_out[b, n] == EOS
        assert (data.tgt_out[b, n + 1:] == PAD).all()
        assert data.tgt_in[b, 0] == BOS
        assert torch.equal(data.tgt_in[b, 1: n + 1], data.tgt_out[b, :n])
    parts = split(data, 5)
    assert [len(p) for p in parts] == [5, 5, 2]
    assert torch.equal(torch.cat([p.images for p in parts]), data.images)


def test_attention_figure_has_one_panel_per_word():
    data, _ = make_dataset(1, seed=0)
    words = data.captions[0]
    att = torch.softmax(torch.randn(len(words), 4, 4), dim=-1)
    fig = plot_caption_attention(data.images[0], words, att, title="t")
    assert len(fig.axes) == len(words) + 1
    assert [ax.get_title() for ax in fig.axes[1:]] == words
    with pytest.raises(ValueError):
        shape_mask("hexagon", 8)


def test_upsampled_cell_sits_on_its_receptive_field():
    """The pixels that feed GridEncoder's cell (row 1, col 2) are rows 1..15, columns 9..23:
    centred on pixel (8, 16), and that is where upsample_attention puts the cell's weight."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny conv net is many times faster on one thread
    try:
        _check_receptive_field()
    finally:
        torch.set_num_threads(threads)


def _check_receptive_field():
    torch.manual_seed(0)
    enc = GridEncoder(3, 4)
    image = torch.rand(1, 3, SIZE, SIZE, requires_grad=True)
    features, grid = enc(image)
    assert grid == (4, 4)
    features[0, 1 * 4 + 2].abs().sum().backward()
    seen = image.grad[0].abs().sum(0) > 0  # (SIZE, SIZE)
    rows, cols = torch.nonzero(seen.any(1)).flatten(), torch.nonzero(seen.any(0)).flatten()
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (1, 15, 9, 23)
    att = torch.zeros(4, 4)
    att[1, 2] = 1.0
    up = upsample_attention(att)
    assert up.shape == (SIZE, SIZE) and up[8, 16] == 1.0 and up.max() == 1.0
    assert (up[seen.logical_not()] < 0.2).all()  # little weight outside the window
    torch.testing.assert_close(upsample_attention(torch.ones(2, 4, 4)), torch.ones(2, SIZE, SIZE))
