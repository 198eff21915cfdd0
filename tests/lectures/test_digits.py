"""The handwritten digits for lecture 5's ViT: a deterministic stratified split, patches that put
the image back together, and the ink mask."""

import pytest
import torch
from sklearn.datasets import load_digits

from lectures.toolkit.digits import from_patches, ink_patches, load_split, to_patches


@pytest.fixture(scope="module")
def split():
    return load_split()


def test_the_split_holds_every_image_once_with_its_label_and_pixels_in_0_1(split):
    assert split.x_train.shape == (1347, 8, 8) and split.x_test.shape == (450, 8, 8)
    assert split.x_train.dtype == torch.float32 and split.y_train.dtype == torch.int64
    everything = torch.cat([split.x_train, split.x_test])
    assert everything.min() == 0 and everything.max() == 1
    digits = load_digits()
    original = torch.tensor(digits.images, dtype=torch.float32) / 16
    labelled = torch.cat([everything.flatten(1), torch.cat([split.y_train, split.y_test])[:, None]
                          .float()], dim=1)                        # (1797, 65): pixels, label
    expected = torch.cat([original.flatten(1), torch.tensor(digits.target)[:, None].float()], 1)
    assert torch.equal(torch.unique(labelled, dim=0, return_counts=True)[1].sort().values,
                       torch.unique(expected, dim=0, return_counts=True)[1].sort().values)
    assert torch.equal(torch.unique(labelled, dim=0), torch.unique(expected, dim=0))


def test_the_split_is_stratified(split):
    for y in (split.y_train, split.y_test):
        counts = torch.bincount(y, minlength=10)
        assert counts.min() > 0
    share_train = torch.bincount(split.y_train) / len(split.y_train)
    share_test = torch.bincount(split.y_test) / len(split.y_test)
    assert (share_train - share_test).abs().max() < 0.01


def test_the_split_is_the_same_every_time_and_the_seed_changes_it(split):
    again, other = load_split(), load_split(seed=1)
    for a, b in zip(split, again, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(split.y_test, other.y_test)
    assert load_split(test_fraction=0.5).x_test.shape[0] in (898, 899)


def test_patches_are_in_reading_order_and_reassemble_the_image():
    images = torch.arange(2 * 8 * 8, dtype=torch.float32).view(2, 8, 8)
    patches = to_patches(images, 2)                          # (2, 16, 4)
    assert patches.shape == (2, 16, 4)
    assert patches[0, 0].tolist() == [0, 1, 8, 9]            # rows 0-1, columns 0-1
    assert patches[0, 1].tolist() == [2, 3, 10, 11]          # the next patch to the right
    assert patches[0, 4].tolist() == [16, 17, 24, 25]        # the first patch of row 2
    for P in (1, 2, 4, 8):
        assert torch.equal(from_patches(to_patches(images, P), P, 8, 8), images)


def test_patches_match_torch_unfold(split):
    x = split.x_test[:5]
    ours = to_patches(x, 2)                                       # (5, 16, 4)
    theirs = torch.nn.functional.unfold(x[:, None], kernel_size=2, stride=2).transpose(1, 2)
    assert torch.equal(ours, theirs)


def test_a_patch_side_that_does_not_divide_the_image_is_refused():
    with pytest.raises(ValueError):
        to_patches(torch.zeros(1, 8, 8), 3)


def test_ink_marks_patches_with_a_pixel_above_the_threshold():
    image = torch.zeros(1, 8, 8)
    image[0, 0, 0] = 0.5                 # patch 0
    image[0, 7, 7] = 0.1                 # patch 15
    assert ink_patches(image, 2)[0].nonzero().flatten().tolist() == [0, 15]
    assert ink_patches(image, 2, threshold=0.25)[0].nonzero().flatten().tolist() == [0]
    assert not ink_patches(torch.zeros(3, 8, 8), 2).any()
