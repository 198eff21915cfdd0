"""Synthetic images for image captioning with attention, made in code.

Each 32 x 32 RGB image has one to three coloured shapes (square, circle, triangle), each in its
own third of the image (left, middle, right), at a random height and size on a black
background. Its caption lists the shapes from left to right, three words each:
"red square left blue circle right". Writing "left" or "circle" needs one region of the image,
so a captioner with attention should look at that shape's region while writing its words.

Also: padded batches for `toolkit.training.train`, and the "where did it look" figure, one panel
per generated word with the upsampled attention laid over the image.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch

from .toy_translation import BOS, EOS, PAD, Vocab

SIZE = 32
COLOURS = {"red": (1.0, 0.2, 0.2), "green": (0.2, 0.9, 0.2), "blue": (0.3, 0.4, 1.0)}
SHAPES = ("square", "circle", "triangle")
POSITIONS = ("left", "middle", "right")
SLOTS = ((0, 11), (11, 21), (21, 32))  # the column range [start, stop) of each position
VOCAB = Vocab([*COLOURS, *SHAPES, *POSITIONS])


@dataclass
class Shape:
    """One shape: colour, kind, position (index into POSITIONS), top-left corner, side."""

    colour: str
    kind: str
    slot: int
    x: int
    y: int
    side: int


def shape_mask(kind: str, side: int) -> np.ndarray:
    """(side, side) boolean footprint of a shape."""
    y, x = np.mgrid[0:side, 0:side] + 0.5  # pixel centres
    if kind == "square":
        return np.ones((side, side), dtype=bool)
    if kind == "circle":
        r = side / 2
        return (x - r) ** 2 + (y - r) ** 2 <= r**2
    if kind == "triangle":  # apex at the top, base along the bottom row
        return np.abs(x - side / 2) <= y / 2
    raise ValueError(f"unknown shape {kind!r}")


def random_scene(rng: random.Random, max_shapes: int = 3) -> list[Shape]:
    """1..max_shapes shapes in distinct positions, sorted left to right."""
    slots = sorted(rng.sample(range(len(POSITIONS)), rng.randint(1, max_shapes)))
    scene = []
    for s in slots:
        side = rng.randint(8, 10)
        start, stop = SLOTS[s]
        x = rng.randint(start, stop - side)
        y = rng.randint(0, SIZE - side)
        scene.append(Shape(rng.choice(list(COLOURS)), rng.choice(SHAPES), s, x, y, side))
    return scene


def draw(scene: list[Shape]) -> np.ndarray:
    """The image (3, SIZE, SIZE), values in [0, 1]."""
    image = np.zeros((3, SIZE, SIZE), dtype=np.float32)
    for sh in scene:
        mask = shape_mask(sh.kind, sh.side)
        patch = image[:, sh.y: sh.y + sh.side, sh.x: sh.x + sh.side]
        for c, value in enumerate(COLOURS[sh.colour]):
            patch[c][mask] = value
    return image


def caption(scene: list[Shape]) -> list[str]:
    """"colour kind position" for every shape, left to right."""
    return [w for sh in sorted(scene, key=lambda s: s.slot)
            for w in (sh.colour, sh.kind, POSITIONS[sh.slot])]


@dataclass
class CaptionBatch:
    """images (B, 3, SIZE, SIZE); tgt_in (B, T) starts with <bos>; tgt_out (B, T) ends with
    <eos> then <pad>. `inputs` is what a captioner takes before tgt_in."""

    images: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    captions: list[list[str]]

    @property
    def inputs(self):
        return (self.images,)

    def __len__(self):
        return len(self.captions)


def make_dataset(n: int, seed: int, max_shapes: int = 3) -> tuple[CaptionBatch, list]:
    """n random images with their captions as one CaptionBatch, and the scenes. Deterministic
    in the seed."""
    rng = random.Random(seed)
    scenes = [random_scene(rng, max_shapes) for _ in range(n)]
    images = torch.from_numpy(np.stack([draw(s) for s in scenes]))
    captions = [caption(s) for s in scenes]
    T = max(len(c) for c in captions) + 1  # + <eos>
    tgt_out = torch.full((n, T), PAD, dtype=torch.long)
    for b, c in enumerate(captions):
        tgt_out[b, : len(c) + 1] = torch.tensor(VOCAB.encode(c) + [EOS])
    tgt_in = torch.cat([torch.full((n, 1), BOS), tgt_out[:, :-1]], dim=1)
    tgt_in[tgt_in == EOS] = PAD  # <eos> is never an input
    return CaptionBatch(images, tgt_in, tgt_out, captions), scenes


def split(data: CaptionBatch, batch_size: int) -> list[CaptionBatch]:
    """Consecutive slices of a CaptionBatch (the data are random already)."""
    return [CaptionBatch(data.images[k: k + batch_size], data.tgt_in[k: k + batch_size],
                         data.tgt_out[k: k + batch_size], data.captions[k: k + batch_size])
            for k in range(0, len(data), batch_size)]


def show_image(image, ax, title: str):
    """Draw a (3, H, W) image tensor or array on ax, without axes (it is a picture)."""
    ax.imshow(np.asarray(image).transpose(1, 2, 0).clip(0, 1))
    ax.set_title(title)
    ax.axis("off")


def _interpolation(n_out: int, n_in: int, stride: int) -> torch.Tensor:
    """(n_out, n_in) linear-interpolation weights from cell centres to pixels (see below)."""
    u = (torch.arange(n_out) / stride).clamp(max=n_in - 1)  # each pixel in cell coordinates
    i0 = u.floor().long()
    i1 = (i0 + 1).clamp(max=n_in - 1)
    frac = u - i0
    M = torch.zeros(n_out, n_in)
    M[torch.arange(n_out), i0] += 1 - frac
    M[torch.arange(n_out), i1] += frac
    return M


def upsample_attention(att, size: int = SIZE) -> torch.Tensor:
    """Attention over an (h, w) feature grid -> (size, size) pixels, for drawing over the image.

    Where does grid cell n sit in the image? Each 3 x 3 convolution with stride 2 and padding 1
    centres its output j on input position 2j, so after the three layers of
    `solutions.GridEncoder` cell n is centred on pixel 8n: the cells' windows start at the image
    border, not in the middle of 8-pixel blocks (plain bilinear resizing would put them 4
    pixels too far right and down). Between centres we interpolate linearly.
    att (..., h, w) -> (..., size, size).
    """
    att = torch.as_tensor(att, dtype=torch.float32)
    h, w = att.shape[-2:]
    Wy, Wx = _interpolation(size, h, size // h), _interpolation(size, w, size // w)
    return Wy @ att @ Wx.T


def plot_caption_attention(image, words, att, *, title: str, alpha: float = 0.6):
    """One panel per generated word: the image with that step's attention over the feature grid
    (att (T, h, w)) upsampled to the image (`upsample_attention`) and laid over it in white.
    The first panel is the image alone. All panels share one scale, so a diffuse map is dim."""
    up = upsample_attention(torch.as_tensor(att)[: len(words)], image.shape[-1])  # (T, H, W)
    fig, axes = plt.subplots(1, len(words) + 1, figsize=(1.7 * (len(words) + 1), 2.2))
    show_image(image, axes[0], "image")
    for ax, word, a in zip(axes[1:], words, up, strict=True):
        show_image(image, ax, word)
        ax.imshow(a.numpy(), cmap="gray", alpha=alpha, vmin=0, vmax=float(up.max()))
    fig.suptitle(title)
    fig.tight_layout()
    return fig
