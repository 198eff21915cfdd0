"""Real images for a small vision Transformer: scikit-learn's bundled handwritten digits.

Nothing may be downloaded while a lecture runs, so the images come with an installed package:
`sklearn.datasets.load_digits` reads a copy that ships inside scikit-learn of the test set of
the UCI "Optical Recognition of Handwritten Digits" data (E. Alpaydin and C. Kaynak, 1998):
1,797 greyscale images of 8 x 8 pixels, 10 classes of about 180 images each, written by 13
people. Each pixel counts the ink in a 4 x 4 block of a 32 x 32 bitmap, so it is an integer
from 0 to 16; `load_split` divides by 16.

`load_split` makes the one fixed, stratified train/test split the lecture uses (each digit keeps
its share in both parts); `to_patches` and `from_patches` cut images into the square patches of
a Vision Transformer and put them back; `ink_patches` says which patches carry any ink.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

SIDE = 8            # pixels per side of an image
MAX_VALUE = 16.0    # the largest pixel value in the data


class DigitSplit(NamedTuple):
    x_train: torch.Tensor    # (N_train, 8, 8) float32 in [0, 1]
    y_train: torch.Tensor    # (N_train,) int64, the digit
    x_test: torch.Tensor     # (N_test, 8, 8)
    y_test: torch.Tensor     # (N_test,)


def load_split(test_fraction: float = 0.25, seed: int = 0) -> DigitSplit:
    """The digits split once into train and test, stratified by class, the same on every call.

    scikit-learn's `train_test_split` with `stratify` draws the test images of each class in
    proportion to the class's size, with `seed` as its `random_state`.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32) / MAX_VALUE   # (1797, 8, 8)
    labels = torch.tensor(digits.target, dtype=torch.int64)                 # (1797,)
    train, test = train_test_split(np.arange(len(labels)), test_size=test_fraction,
                                   random_state=seed, stratify=digits.target)
    train, test = torch.as_tensor(train), torch.as_tensor(test)
    return DigitSplit(images[train], labels[train], images[test], labels[test])


def to_patches(images: torch.Tensor, P: int) -> torch.Tensor:
    """Cut (B, H, W) images into non-overlapping P x P patches, in reading order.

    Returns (B, (H/P) * (W/P), P * P): patch r * (W/P) + c holds the pixels of rows r*P..r*P+P-1
    and columns c*P..c*P+P-1, row by row.
    """
    B, H, W = images.shape
    if H % P or W % P:
        raise ValueError(f"a {H} x {W} image does not split into {P} x {P} patches")
    x = images.unfold(1, P, P).unfold(2, P, P)          # (B, H/P, W/P, P, P)
    return x.reshape(B, (H // P) * (W // P), P * P)


def from_patches(patches: torch.Tensor, P: int, H: int, W: int) -> torch.Tensor:
    """The inverse of `to_patches`: (B, (H/P) * (W/P), P * P) -> (B, H, W)."""
    B = patches.shape[0]
    x = patches.reshape(B, H // P, W // P, P, P)        # (B, rows, cols, P, P)
    return x.permute(0, 1, 3, 2, 4).reshape(B, H, W)    # rows of pixels, then columns


def ink_patches(images: torch.Tensor, P: int, threshold: float = 0.0) -> torch.Tensor:
    """(B, n_patches) boolean: True where some pixel of the patch is above `threshold`."""
    return to_patches(images, P).amax(dim=-1) > threshold
