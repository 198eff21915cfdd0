"""Checks that the notebooks' tests call, written to explain what went wrong.

A failing check raises `CheckFailure` (an AssertionError) whose message says what was expected,
what came back, where the largest error is, and the cause when a known mistake's variant
reproduces the answer. These helpers contain no solutions, so the student edition ships them.
"""


# The names of PyTorch's ready-made pieces a test may switch off (forbidden=SOFTMAX): the
# switches run in the student's process, so they live on the sandbox's side.
from grader.sandbox.forbidden import ATTENTION, LAYER_NORM, SOFTMAX, forbidden_builtins

from .compare import (
    CheckFailure,
    as_matrix,
    as_number,
    expect_close,
    expect_shape,
    expect_tensor,
)
from .devices import expect_follows_device
from .properties import (
    expect_no_lookahead,
    expect_permutation_equivariant,
    expect_rows_sum_to_one,
    expect_zero_where_masked,
)
from .reference import all_cases, compare_gradients, compare_outputs, load_weights

__all__ = [
    "ATTENTION",
    "LAYER_NORM",
    "SOFTMAX",
    "CheckFailure",
    "all_cases",
    "as_matrix",
    "as_number",
    "compare_gradients",
    "compare_outputs",
    "expect_close",
    "expect_follows_device",
    "expect_no_lookahead",
    "expect_permutation_equivariant",
    "expect_rows_sum_to_one",
    "expect_shape",
    "expect_tensor",
    "expect_zero_where_masked",
    "forbidden_builtins",
    "load_weights",
]

# In a notebook (an IPython kernel), a failing check shows its message, not a traceback.
from .notebook import show_failures_briefly  # noqa: E402

show_failures_briefly()
