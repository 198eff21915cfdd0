"""Properties any correct attention must have, checked without knowing the exact answer.

Visible tests use these: they say which property breaks, where and by how much, without
revealing the expected numbers. A cause is named only where the broken property proves it.
"""

from __future__ import annotations

import torch

from .causes import cause_lines
from .compare import CheckFailure, _fmt_index, argmax_index, expect_tensor


def _non_finite(att, what) -> None:
    bad = ~torch.isfinite(att)
    if bad.any():
        first = bad.nonzero()[0]
        kind = "NaN" if torch.isnan(att[tuple(first)]) else "inf"
        others = int(bad.sum()) - 1
        raise CheckFailure(
            f"{what} contains {kind} at {_fmt_index(first)}"
            + (f" (and {others} other NaN or inf entries)" if others else "")
            + ". NaN comes from 0 / 0 or inf / inf: a softmax over a row where every score is "
            "-inf (is every key masked out?), or exp of a large score without subtracting the "
            "maximum.")


def expect_rows_sum_to_one(att, what: str = "attention weights", mask=None) -> None:
    """Each query's weights over the keys (the last axis) must form a distribution."""
    att = expect_tensor(att, what).detach()
    _non_finite(att, what)
    if (att < -1e-6).any():
        where = _fmt_index((att < -1e-6).nonzero()[0])
        raise CheckFailure(f"{what} has a negative entry at {where}: weights come from a "
                           "softmax and are never negative")
    sums = att.sum(dim=-1)
    tol = 1e-4 if att.dtype in (torch.float32, torch.float16, torch.bfloat16) else 1e-8
    ok = (sums - 1).abs() <= tol
    if ok.all():
        return
    where = argmax_index((sums - 1).abs())
    msg = (f"{what}: row {_fmt_index(where)} sums to {float(sums[where]):.6g}, not 1 "
           "(each query's weights over all keys, the last axis, must sum to one).")
    for dim in range(att.dim() - 1):
        if ((att.sum(dim=dim) - 1).abs() <= tol).all():
            msg += (f"\nThe weights sum to one along axis {dim} (of {att.dim()}) instead: the "
                    "softmax was normalised along that axis, not the last.")
            break
    else:
        if mask is not None and (sums <= 1 + tol).all():
            msg += ("\nEvery row sums to at most one: weight was taken away from some keys "
                    "after the softmax instead of before it.")
    raise CheckFailure(msg)


def expect_zero_where_masked(att, mask, what: str = "attention weights") -> None:
    """Keys a query may not attend to (mask False) must get exactly zero weight."""
    att = expect_tensor(att, what).detach()
    _non_finite(att, what)
    mask = mask.expand_as(att)
    leaked = (~mask) & (att.abs() > 0)
    if leaked.any():
        where = leaked.nonzero()[0]
        allowed_zero = (mask & (att == 0)).sum()
        msg = (f"{what} is {float(att[tuple(where)]):.3g} at {_fmt_index(where)}, where the "
               f"mask is False: masked-out keys must get exactly zero weight "
               f"({int(leaked.sum())} masked entries have weight).")
        if bool(((att > 0) == ~mask).all()) and int(allowed_zero) > 0:
            msg += ("\nThe weights are positive exactly where the mask is False."
                    + cause_lines(["mask_inverted"]))
        raise CheckFailure(msg)


def _same(a, b) -> bool:
    return bool(torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all())


def _expect_deterministic(fn, x, first, what):
    _non_finite(first, what)
    if not _same(fn(x).detach(), first):
        raise CheckFailure(
            f"{what} changes between two calls on the same input, so it cannot be checked. "
            "Is dropout active in evaluation mode (F.dropout without training=self.training), "
            "or does the function draw random numbers?")


def expect_no_lookahead(attend, x: torch.Tensor, what: str = "output") -> None:
    """Changing tokens at positions > t must not change the output at position t.

    attend: function of x (B, T, D) returning the output (B, T, D') under a causal mask.
    """
    T = x.size(1)
    before = expect_tensor(attend(x), what).detach()
    _expect_deterministic(attend, x, before, what)
    for t in range(T - 1):
        changed = x.clone()
        changed[:, t + 1:] = torch.randn_like(changed[:, t + 1:])
        after = attend(changed).detach()
        if not torch.allclose(before[:, : t + 1], after[:, : t + 1], atol=1e-5, rtol=1e-4):
            raise CheckFailure(
                f"{what} at position {t} changed when only positions {t + 1}..{T - 1} (the "
                "future) were changed: query i may attend only to keys 0..i, and here it saw "
                "a later one.")


def expect_permutation_equivariant(fn, x: torch.Tensor, what: str = "output") -> None:
    """Without positions or masks, self-attention treats the input as a set: shuffling the
    tokens shuffles the outputs the same way, and changes nothing else."""
    g = torch.Generator().manual_seed(1)
    perm = torch.randperm(x.size(1), generator=g).to(x.device)
    y = expect_tensor(fn(x), what).detach()
    _expect_deterministic(fn, x, y, what)
    y_perm = fn(x[:, perm]).detach()
    if not torch.allclose(y[:, perm], y_perm, atol=1e-5, rtol=1e-4):
        err = (y[:, perm] - y_perm).abs().max()
        raise CheckFailure(
            f"{what} is not permutation equivariant: shuffling the input tokens with "
            f"{perm.tolist()} should shuffle the outputs the same way, but they differ by up "
            f"to {float(err):.3g}. Something mixes information across the token axis outside "
            "the attention weights (for example a reshape that interleaves tokens and heads).")
