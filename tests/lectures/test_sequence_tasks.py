"""Toy digit-sequence tasks: right targets, and a held-out split that training never sees."""

import pytest
import torch

from lectures.toolkit.sequence_tasks import (
    TASKS,
    is_held_out,
    palindromes,
    random_digits,
    reverse_shift,
    task_batch,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_targets():
    x = torch.tensor([[3, 1, 4, 1, 5]])
    assert TASKS["copy"](x).tolist() == [[3, 1, 4, 1, 5]]
    assert TASKS["reverse"](x).tolist() == [[5, 1, 4, 1, 3]]
    assert TASKS["sort"](x).tolist() == [[1, 1, 3, 4, 5]]
    assert reverse_shift(torch.tensor([[9, 0, 2]])).tolist() == [[3, 1, 0]]


@pytest.mark.parametrize("task", list(TASKS))
def test_batch_shapes_and_range(task):
    x, y = task_batch(task, 50, 6, generator=_gen())
    assert x.shape == y.shape == (50, 6) and x.dtype == torch.long
    assert 0 <= int(x.min()) and int(x.max()) <= 9


def test_splits_are_disjoint_and_test_is_a_small_share():
    train = random_digits(4000, 5, split="train", generator=_gen(1))
    test = random_digits(500, 5, split="test", generator=_gen(2))
    assert not is_held_out(train).any() and is_held_out(test).all()
    seen = {tuple(r) for r in train.tolist()}
    assert not seen & {tuple(r) for r in test.tolist()}
    share = is_held_out(torch.randint(0, 10, (20000, 5), generator=_gen(3))).float().mean()
    assert 0.09 < float(share) < 0.16


def test_same_seed_same_batch():
    a = random_digits(10, 4, generator=_gen(5))
    b = random_digits(10, 4, generator=_gen(5))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="split"):
        random_digits(3, 4, split="valid")


@pytest.mark.parametrize("length", [6, 7])
def test_palindromes_are_labelled_right_and_balanced(length):
    x, y = palindromes(400, length, generator=_gen(4))
    assert x.shape == (400, length) and y.shape == (400,)
    assert torch.equal(y, (x == x.flip(-1)).all(-1).long())
    assert 0.4 < float(y.float().mean()) < 0.6
    # negatives differ from a palindrome in exactly one mirrored pair
    neg = x[y == 0]
    assert ((neg != neg.flip(-1)).sum(-1) == 2).all()
    xt, _ = palindromes(100, length, split="test", generator=_gen(4))
    assert is_held_out(xt).all()
