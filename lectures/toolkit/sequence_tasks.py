"""Toy digit-sequence tasks (copy, reversal, sorting, palindromes) with a fixed held-out split.

Small sequence tasks let a lecture train a Transformer to 100% in seconds and then *look* at its
attention: in a reversal, output i must read input T-1-i, so the right attention pattern is
known in advance.

Held-out sequences are never trained on: every sequence belongs to exactly one split, decided
by a fixed rule on its digits (`is_held_out`), so a test set drawn from split="test" is
disjoint from every training batch, however many batches are drawn.
"""

from __future__ import annotations

import torch

N_DIGITS = 10  # tokens 0..9


def is_held_out(x: torch.Tensor) -> torch.Tensor:
    """(..., T) digit sequences -> (...) bool, True for the held-out (test) split.

    A hash of the digits (FNV-1a, 32 bits) puts about one sequence in eight in the test split.
    It is a deterministic function of the sequence, so the same sequence always lands on the
    same side, and it scrambles well enough that structured sets (palindromes, sorted
    sequences) split in the same one-in-eight proportion.
    """
    h = torch.full(x.shape[:-1], 2166136261, dtype=torch.int64, device=x.device)
    for t in range(x.size(-1)):
        h = ((h ^ x[..., t]) * 16777619) & 0xFFFFFFFF
    return (h >> 13) % 8 == 0


def random_digits(n: int, length: int, *, split: str = "train", generator=None,
                  n_digits: int = N_DIGITS) -> torch.Tensor:
    """n random sequences of `length` digits from one split ("train" or "test"): (n, length).

    Draws uniformly and keeps only the sequences of the requested split (rejection sampling).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    kept, have = [], 0
    while have < n:
        x = torch.randint(0, n_digits, (2 * n + 16, length), generator=generator)
        x = x[is_held_out(x) == (split == "test")]
        kept.append(x)
        have += len(x)
    return torch.cat(kept)[:n]


def copy(x: torch.Tensor) -> torch.Tensor:
    """The target of the copy task: the input itself."""
    return x.clone()


def reverse(x: torch.Tensor) -> torch.Tensor:
    """The target of the reversal task: y_i = x_{T-1-i}."""
    return x.flip(-1)


def sort(x: torch.Tensor) -> torch.Tensor:
    """The target of the sorting task: the digits in ascending order."""
    return x.sort(dim=-1).values


def reverse_shift(x: torch.Tensor, shift: int = 1, n_digits: int = N_DIGITS) -> torch.Tensor:
    """Copy with a transform: reverse the sequence and add `shift` to each digit (mod n_digits).

    Each output digit still depends on exactly one input position, so cross-attention has a
    single right place to look, while the output token differs from the one it reads.
    """
    return (x.flip(-1) + shift) % n_digits


TASKS = {"copy": copy, "reverse": reverse, "sort": sort, "reverse_shift": reverse_shift}


def task_batch(task: str, n: int, length: int, *, split: str = "train", generator=None):
    """(inputs, targets), both (n, length) long tensors, for one of TASKS."""
    x = random_digits(n, length, split=split, generator=generator)
    return x, TASKS[task](x)


def palindromes(n: int, length: int, *, split: str = "train", generator=None):
    """A balanced labelled set for palindrome detection: (x (n, length), label (n,)).

    Half are palindromes (label 1); the other half are palindromes with one digit changed
    (label 0), so telling them apart needs a comparison of mirrored positions, not a guess from
    digit counts. The split rule of `is_held_out` applies to the final sequences.
    """
    kept_x, kept_y, have = [], [], 0
    while have < n:
        m = 2 * n + 16
        half = torch.randint(0, N_DIGITS, (m, (length + 1) // 2), generator=generator)
        x = torch.cat([half, half[:, : length // 2].flip(-1)], dim=1)  # (m, length) palindromes
        y = torch.arange(m) % 2  # alternate labels 0, 1, 0, 1 ...
        neg = y == 0
        pos = torch.randint(0, length, (m,), generator=generator)
        bump = torch.randint(1, N_DIGITS, (m,), generator=generator)  # never 0: a real change
        rows = torch.arange(m)
        x[rows[neg], pos[neg]] = (x[rows[neg], pos[neg]] + bump[neg]) % N_DIGITS
        # a change at the middle of an odd-length sequence leaves a palindrome: relabel it
        y = (x == x.flip(-1)).all(-1).long()
        keep = is_held_out(x) == (split == "test")
        kept_x.append(x[keep])
        kept_y.append(y[keep])
        have += int(keep.sum())
    x, y = torch.cat(kept_x)[:n], torch.cat(kept_y)[:n]
    return x, y
