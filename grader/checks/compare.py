"""Comparing a student's tensor with the expected one, and saying how they differ."""

from __future__ import annotations

import torch

from grader.failure import CheckFailure  # (re-exported: grader.checks.CheckFailure)

# Tolerances per dtype: float32 answers computed in a different (correct) order differ from the
# reference by a few ulps times the size of the computation. float64 answers may hold one
# constant rounded to float32 (`torch.tensor(d).sqrt()` is float32 by default): a relative
# error of 6e-8 in one step, up to about 2e-7 through a softmax at unit scale; the grader
# checks attention, not where a constant was made, so float64's bound leaves room for that.
TOLERANCES = {
    torch.float64: (1e-8, 1e-6),  # (atol, rtol)
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-3, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}




def argmax_index(values: torch.Tensor) -> tuple[int, ...]:
    """The index of the largest entry, as a tuple. (Not torch.unravel_index: its first call
    imports PyTorch's symbolic-shape machinery in every process.)"""
    flat, index = int(values.flatten().argmax()), []
    for size in reversed(values.shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def _fmt_index(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def fmt_pair(expected: float, actual: float) -> tuple[str, str]:
    """Both numbers with just enough digits that they print differently when they differ."""
    for digits in range(6, 18):
        e, a = f"{expected:.{digits}g}", f"{actual:.{digits}g}"
        if e != a:
            break
    return e, a


def type_name(value) -> str:
    """The type of a value, in the student's words (a handle on a remote object says its type)."""
    from grader.judge.remote import Remote

    return value._ref.type if isinstance(value, Remote) else type(value).__name__


def expect_tensor(actual, what: str) -> torch.Tensor:
    if not isinstance(actual, torch.Tensor):
        raise CheckFailure(f"{what} should be a torch.Tensor, but got {type_name(actual)}")
    return actual


# ----- answers typed in: every form the text allows -------------------------------------------

def as_number(value) -> float:
    """A float from a Python or numpy number, a Fraction, a Decimal or a 0-d tensor."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach().double())
    ratio = getattr(value, "as_integer_ratio", None)  # Fraction, Decimal, numpy and a handle
    if ratio is None:
        raise TypeError(f"{type_name(value)} is not a number")
    try:
        numerator, denominator = ratio()
    except (ValueError, OverflowError):  # Decimal('NaN'), Decimal('Infinity')
        return float(str(value))
    return numerator / denominator


def _plain(value, depth: int = 0):
    """Nested lists of floats from nested lists, tuples, arrays and tensors of numbers."""
    if depth > 8:
        raise TypeError("nested too deeply")
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().to(torch.float64).tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # arrays, any dtype
        return _plain(value.tolist(), depth + 1)
    if _is_remote_array(value):  # in autograde: an array of objects stays in the student's
        return _plain(value.tolist(), depth + 1)  # process (the codec sends only numbers)
    return as_number(value)


def _is_remote_array(value) -> bool:
    """A handle on a numpy array the sandbox's codec could not send as data: one of objects
    (numpy makes a list of Fractions or Decimals one). Its `tolist()`, asked of the student's
    process, comes back as a list of numbers or of handles on numbers, which `as_number`
    reads; so autograde takes every form `grader check` (which holds the array itself) takes."""
    from grader.judge.remote import Remote

    return isinstance(value, Remote) and value._ref.type == "ndarray"


def as_matrix(value, shape, what: str) -> torch.Tensor:
    """A typed-in answer as a float64 tensor of `shape`: nested lists or tuples of Python
    numbers, Fractions or Decimals, numpy arrays, or tensors of any dtype."""
    try:
        matrix = torch.tensor(_plain(value), dtype=torch.float64)
    except (TypeError, ValueError, AttributeError) as e:
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


# ----- comparing ---------------------------------------------------------------------------

def tolerances(dtype, atol=None, rtol=None) -> tuple[float, float]:
    default_atol, default_rtol = TOLERANCES.get(dtype, (1e-5, 1e-4))
    return (default_atol if atol is None else atol), (default_rtol if rtol is None else rtol)


def differences(actual, expected, atol=None, rtol=None) -> str | None:
    """What is wrong with `actual` against `expected` (same shape), or None when they match."""
    atol, rtol = tolerances(expected.dtype, atol, rtol)
    actual, expected = actual.detach(), expected.detach()
    if actual.numel() == 0:
        return None
    if not expected.is_floating_point():  # masks, indices and tokens: compared exactly
        return _exact_differences(actual, expected)
    # The usual case first: every error finite and within the bound, in isclose's own
    # arithmetic (the bound made finite: an infinite error is never within it). A NaN or an
    # infinity anywhere fails this test and goes on to isclose, which has the last word.
    bound = expected.abs().mul_(rtol).add_(atol).nan_to_num_()
    if bool(torch.sub(actual, expected).abs_().le_(bound).all()):
        return None
    close = torch.isclose(actual, expected, atol=atol, rtol=rtol, equal_nan=True)
    if close.all():  # NaN where NaN is expected, an infinity where the same one is
        return None
    for name, bad in (("NaN", torch.isnan), ("inf", torch.isinf)):
        wrong = bad(actual) & ~bad(expected)
        if wrong.any():
            first = wrong.nonzero()[0]
            others = int(wrong.sum()) - 1
            return (f"contains {name} at {_fmt_index(first)}"
                    + (f" (and at {others} other places)" if others else "")
                    + f", where {float(expected[tuple(first)]):.6g} was expected")
    error = (actual - expected).abs().masked_fill(close, 0).nan_to_num(nan=float("inf"))
    where = argmax_index(error)
    e, a = fmt_pair(float(expected[where]), float(actual[where]))
    return (f"is wrong at {int((~close).sum())} of {close.numel()} entries. Largest error "
            f"{float(error[where]):.3g} at index {_fmt_index(where)}: expected {e}, got {a}")


def _exact_differences(actual, expected) -> str | None:
    """Integers and booleans (tokens, indices, masks) are right or wrong, never near: the
    message names the positions and the values, not an error of so much."""
    if actual.dtype != expected.dtype:
        actual, expected = actual.double(), expected.double()
    wrong = actual.ne(expected)
    if not bool(wrong.any()):
        return None
    first = tuple(wrong.nonzero()[0].tolist())
    rows = ""
    if wrong.dim() == 2 and wrong.size(0) > 1:
        bad_rows = wrong.any(dim=1).nonzero().flatten().tolist()
        rows = f" (in row{'s' if len(bad_rows) > 1 else ''} " + ", ".join(
            map(str, bad_rows[:8])) + (", ..." if len(bad_rows) > 8 else "") + ")"
    return (f"is wrong at {int(wrong.sum())} of {wrong.numel()} entries{rows}; the first at "
            f"index {_fmt_index(first)}: expected {expected[first].item()}, got "
            f"{actual[first].item()}")


def matches(actual, predicted, atol=None, rtol=None, slack: float = 10) -> bool:
    """Whether a known mistake's output reproduces `actual` (same shape, within `slack` times
    the tolerance: a computation's own rounding may differ from the mistake's)."""
    if not (isinstance(actual, torch.Tensor) and isinstance(predicted, torch.Tensor)):
        return False
    if tuple(actual.shape) != tuple(predicted.shape) or actual.device != predicted.device:
        return False
    predicted = predicted.detach()
    if predicted.dtype != actual.dtype:
        predicted = predicted.to(actual.dtype)
    atol, rtol = tolerances(actual.dtype, atol, rtol)
    return differences(actual, predicted, slack * atol, slack * rtol) is None


def expect_close(actual, expected: torch.Tensor, what: str, *, likely_causes=None,
                 atol: float | None = None, rtol: float | None = None,
                 cause_slack: float = 10) -> None:
    """Fail with a precise message unless `actual` matches `expected` elementwise.

    likely_causes: {cause id (grader.checks.causes) or sentence: tensor} of what known mistakes
    return on the same inputs; the message names those that reproduce `actual`, to within
    `cause_slack` times the tolerance (typed-in answers, whose precision is the tolerance, pass
    1: a mistake is named only when the answer is as close to it as a right answer must be to
    the truth).
    """
    from .causes import CAUSES

    def causes_line():
        named = [c for c, wrong in (likely_causes or {}).items()
                 if wrong is not None
                 and matches(actual, torch.as_tensor(wrong), atol, rtol, cause_slack)]
        return "".join(f"\nLikely cause: {CAUSES.get(c, c)}." for c in named)

    expect_tensor(actual, what)
    if tuple(actual.shape) != tuple(expected.shape):
        raise CheckFailure(f"{what} has shape {tuple(actual.shape)}, expected "
                           f"{tuple(expected.shape)}" + causes_line())
    if actual.dtype != expected.dtype:
        raise CheckFailure(f"{what} has dtype {actual.dtype}, expected {expected.dtype}"
                           + causes_line())
    if actual.device != expected.device:
        raise CheckFailure(f"{what} is on device {actual.device}, expected {expected.device} "
                           "(create new tensors on the device of the inputs)")
    wrong = differences(actual, expected, atol, rtol)
    if wrong is not None:
        raise CheckFailure(f"{what} {wrong}." + _precision_note(actual, expected, atol, rtol)
                           + causes_line())


def _precision_note(actual, expected, atol, rtol) -> str:
    """For float64 answers that are close everywhere but not within float64's tolerance, that
    fact, measured; and that the values were computed in float32 only when they show it (every
    entry a float32 number). Closeness alone names no cause: a changed constant (an eps used
    as a floor) and float32 arithmetic followed by float64 steps look the same."""
    if expected.dtype != torch.float64 or atol is not None or rtol is not None:
        return ""
    if differences(actual, expected, *TOLERANCES[torch.float32]) is not None:
        return ""
    (a32, r32), (a64, r64) = TOLERANCES[torch.float32], TOLERANCES[torch.float64]
    note = (f"\nEvery value is within {a32:g} + {r32:g}·|expected| of the expected one, but "
            f"float64 answers are graded to {a64:g} + {r64:g}·|expected|.")
    if actual.numel() >= 4 and bool(torch.equal(actual.float().double(), actual)):
        note += ("\nEvery entry is a float32 number: these values were computed in float32 "
                 "and then converted (a float32 tensor or constant, or torch.tensor(...) "
                 "without dtype=, somewhere on the way).")
    return note
