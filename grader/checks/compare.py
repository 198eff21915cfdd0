"""Comparing a student's tensor with the expected one, and saying how they differ."""

from __future__ import annotations

import torch

# Tolerances per dtype: float32 answers computed in a different (correct) order differ from the
# reference by a few ulps times the size of the computation.
TOLERANCES = {
    torch.float64: (1e-9, 1e-7),  # (atol, rtol)
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-3, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}


class CheckFailure(AssertionError):
    """A test found a wrong answer; the message is written for the student."""


def _fmt_index(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def expect_tensor(actual, what: str) -> torch.Tensor:
    if not isinstance(actual, torch.Tensor):
        raise CheckFailure(f"{what} should be a torch.Tensor, but got {type(actual).__name__}")
    return actual


def as_matrix(value, shape, what: str) -> torch.Tensor:
    """A typed-in answer (nested lists, numpy or torch) as a float64 tensor of `shape`."""
    try:
        matrix = torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as e:
        raise CheckFailure(f"{what} should be a list of {shape[0]} rows with {shape[1]} numbers "
                           f"each; could not read it as a matrix ({e})") from None
    expect_shape(matrix, shape, what)
    return matrix


def expect_shape(actual, shape, what: str) -> None:
    expect_tensor(actual, what)
    if tuple(actual.shape) != tuple(shape):
        raise CheckFailure(
            f"{what} has shape {tuple(actual.shape)}, expected {tuple(shape)}"
        )


def expect_close(actual, expected: torch.Tensor, what: str, *, likely_causes=None,
                 atol: float | None = None, rtol: float | None = None) -> None:
    """Fail with a precise message unless `actual` matches `expected` elementwise.

    likely_causes: {description: tensor} of results that known mistakes would produce on the
    same inputs; if `actual` matches one of them, the message names it.
    """
    expect_shape(actual, expected.shape, what)
    if actual.dtype != expected.dtype:
        raise CheckFailure(f"{what} has dtype {actual.dtype}, expected {expected.dtype} "
                           "(the result should keep the dtype of the inputs)")
    if actual.device != expected.device:
        raise CheckFailure(f"{what} is on device {actual.device}, expected {expected.device} "
                           "(create new tensors with device=<an input>.device)")
    default_atol, default_rtol = TOLERANCES.get(expected.dtype, (1e-5, 1e-4))
    atol = default_atol if atol is None else atol
    rtol = default_rtol if rtol is None else rtol

    actual, expected = actual.detach(), expected.detach()
    if actual.numel() == 0:
        return
    if not expected.is_floating_point():  # masks and indices: exact
        actual, expected, atol, rtol = actual.double(), expected.double(), 0.0, 0.0
    bad_nan = torch.isnan(actual) & ~torch.isnan(expected)
    if bad_nan.any():
        index = _fmt_index(bad_nan.nonzero()[0])
        raise CheckFailure(
            f"{what} contains NaN at {index} (and {int(bad_nan.sum()) - 1} other places) where "
            f"{float(expected[tuple(bad_nan.nonzero()[0])]):.6g} was expected. NaN usually comes "
            "from a softmax over a row where every score is -inf, or from inf - inf."
            + _cause_message(actual, likely_causes, atol, rtol)
        )
    close = torch.isclose(actual, expected, atol=atol, rtol=rtol, equal_nan=True)
    if close.all():
        return
    error = (actual - expected).abs().masked_fill(close, 0).nan_to_num(nan=float("inf"))
    where = torch.unravel_index(error.flatten().argmax(), error.shape)
    raise CheckFailure(
        f"{what} is wrong at {int((~close).sum())} of {close.numel()} entries. "
        f"Largest error {float(error[where]):.3g} at index {_fmt_index(where)}: "
        f"expected {float(expected[where]):.6g}, got {float(actual[where]):.6g}."
        + _cause_message(actual, likely_causes, atol, rtol)
    )


def _cause_message(actual, likely_causes, atol, rtol) -> str:
    for cause, wrong in (likely_causes or {}).items():
        if wrong is None or tuple(wrong.shape) != tuple(actual.shape):
            continue
        wrong = wrong.detach().to(actual.dtype)
        if torch.isclose(actual, wrong, atol=atol, rtol=rtol, equal_nan=True).all():
            return f"\nLikely cause: {cause}."
    return ""
