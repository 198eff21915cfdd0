"""The checks' failure messages say what is wrong, and the built-ins really are switched off."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

import solutions
from grader.checks import (
    CheckFailure,
    compare_gradients,
    compare_outputs,
    expect_close,
    expect_no_lookahead,
    expect_permutation_equivariant,
    expect_rows_sum_to_one,
    expect_shape,
    expect_zero_where_masked,
    forbidden_builtins,
)
from grader.checks.causes import CAUSES
from solutions import mistakes


def qkv(L=4, S=5, d=8):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(2, L, d, generator=g, dtype=torch.float64),
            torch.randn(2, S, d, generator=g, dtype=torch.float64),
            torch.randn(2, S, 3, generator=g, dtype=torch.float64))


def test_expect_close_reports_largest_error_and_where():
    expected = torch.zeros(2, 3, dtype=torch.float64)
    actual = expected.clone()
    actual[1, 2] = 0.5
    with pytest.raises(CheckFailure, match=r"1 of 6 entries.*0\.5 at index \[1, 2\]"):
        expect_close(actual, expected, "x")
    expect_close(expected + 1e-12, expected, "x")  # within tolerance


def test_float64_holds_a_float32_constant_and_says_when_only_float32_precision_is_met():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(4, 8, generator=g, dtype=torch.float64), torch.randn(6, 8, generator=g,
                                                                               dtype=torch.float64)
    expected = torch.softmax(q @ k.T / math.sqrt(8), dim=-1)
    one_constant = torch.softmax(q @ k.T / torch.tensor(8).sqrt(), dim=-1)  # sqrt in float32
    expect_close(one_constant, expected, "weights")  # passes: one constant rounded to float32
    # close everywhere, computed in float64 (an eps floor, a constant a little off): the
    # closeness is said, float32 is not named
    close = expected * (1 + 3e-6)
    with pytest.raises(CheckFailure) as failure:
        expect_close(close, expected, "weights")
    assert "Every value is within 1e-05 + 0.0001·|expected|" in str(failure.value)
    assert "float32" not in str(failure.value), str(failure.value)
    # the same, with every entry a float32 number: the values show where they were computed
    in_float32 = (expected * (1 + 3e-6)).float().double()
    with pytest.raises(CheckFailure, match="Every entry is a float32 number"):
        expect_close(in_float32, expected, "weights")
    with pytest.raises(CheckFailure) as gross:
        expect_close(expected + 0.1, expected, "weights")
    assert "Every value is within" not in str(gross.value)
    assert "float32" not in str(gross.value)


@pytest.mark.parametrize("actual, message", [
    (torch.zeros(3, 2, dtype=torch.float64), r"shape \(3, 2\), expected \(2, 3\)"),
    (torch.zeros(2, 3, dtype=torch.float32), "dtype torch.float32"),
    (torch.full((2, 3), float("nan"), dtype=torch.float64), "NaN"),
    ([[0.0] * 3] * 2, "should be a torch.Tensor"),
])
def test_expect_close_explains_shape_dtype_nan_and_type(actual, message):
    with pytest.raises(CheckFailure, match=message):
        expect_close(actual, torch.zeros(2, 3, dtype=torch.float64), "x")


def test_differences_names_every_kind_of_wrong_entry_and_passes_only_close_ones():
    """Each pair of special and ordinary values at one entry: None exactly when the entries
    are close (NaN matching NaN); a NaN or an infinity where the expected value has none is
    named as such, whatever the order in which the comparison looks."""
    from grader.checks.compare import differences

    values = [0.0, 1.0, 1.0 + 1e-12, 2.0, float("nan"), float("inf"), float("-inf")]
    for a in values:
        for e in values:
            actual = torch.tensor([0.5, a, 0.25], dtype=torch.float64)
            expected = torch.tensor([0.5, e, 0.25], dtype=torch.float64)
            found = differences(actual, expected)
            same = (math.isnan(a) and math.isnan(e)) or math.isclose(a, e, rel_tol=1e-7) \
                or a == e
            assert (found is None) == same, (a, e, found)
            if math.isnan(a) and not math.isnan(e):
                assert found.startswith("contains NaN at [1]"), (a, e, found)
            elif math.isinf(a) and not math.isinf(e):
                assert found.startswith("contains inf at [1]"), (a, e, found)
            elif not same:
                assert found.startswith("is wrong at 1 of 3 entries"), (a, e, found)
    mask = torch.tensor([[True, False]])
    assert differences(mask, mask.clone()) is None
    assert differences(~mask, mask).startswith("is wrong at 2 of 2 entries")


def test_differences_agrees_with_isclose_at_the_edge_of_the_tolerance():
    """differences() settles most comparisons before torch.isclose: its verdict must be
    isclose's, for entries on both sides of the bound, in every floating dtype."""
    from grader.checks.compare import differences, tolerances

    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        atol, rtol = tolerances(dtype)
        verdicts = set()
        for scale in (0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 2.0):
            for _ in range(20):
                expected = (torch.randn(3, 4, generator=g, dtype=torch.float64) * 10).to(dtype)
                bound = atol + rtol * expected.double().abs()
                step = torch.randn(3, 4, generator=g, dtype=torch.float64).sign() * bound
                actual = (expected.double() + scale * step * (torch.rand(
                    3, 4, generator=g, dtype=torch.float64) < 0.2)).to(dtype)
                close = bool(torch.isclose(actual, expected, atol=atol, rtol=rtol).all())
                assert (differences(actual, expected) is None) == close, (dtype, scale)
                verdicts.add(close)
        assert verdicts == {True, False}, dtype  # both sides of the bound were tried


def test_unchanged_is_exact_with_nan_equal_to_nan():
    """The in-place check: every pair of special and ordinary values at one entry, and
    integers, booleans, shapes and dtypes: unchanged exactly when bit-for-bit the same values
    (NaN where NaN was; 0.0 and -0.0 count as the same number)."""
    from grader.sandbox.codec import unchanged

    values = [0.0, -0.0, 1.0, 1.0 + 1e-12, float("nan"), float("inf"), float("-inf")]
    for b in values:
        for a in values:
            before = torch.tensor([0.5, b, 0.25], dtype=torch.float64)
            after = torch.tensor([0.5, a, 0.25], dtype=torch.float64)
            same = (math.isnan(a) and math.isnan(b)) or a == b
            assert unchanged(before, after) == same, (b, a)
    ints = torch.arange(6).view(2, 3)
    assert unchanged(ints, ints.clone())
    assert not unchanged(ints, ints.clone().fill_(1))
    assert unchanged(ints > 2, ints.clone() > 2)
    assert not unchanged(ints > 2, ints > 3)
    assert not unchanged(ints, ints.view(3, 2))  # the same numbers in another shape
    assert not unchanged(ints, ints.double())  # and in another dtype


def test_expect_shape():
    with pytest.raises(CheckFailure, match=r"has shape \(4,\), expected \(2, 2\)"):
        expect_shape(torch.zeros(4), (2, 2), "weights")


def scores(q, k):
    return q @ k.mT / math.sqrt(q.size(-1))


@pytest.mark.parametrize("cause, masked", [
    ("softmax_over_queries", False), ("not_scaled", False), ("mask_after_softmax", True),
    ("mask_zero_fill", True), ("mask_inverted", True)])
def test_hidden_comparison_names_a_cause_only_when_its_variant_reproduces(cause, masked):
    q, k, v = qkv()
    mask = torch.rand(2, 4, 5, generator=torch.Generator().manual_seed(1)) < 0.5
    mask[..., 0], mask[..., 1] = True, False  # every row keeps one key and drops one
    inputs = (q, k, v, mask) if masked else (q, k, v)

    def student(*args):  # the mistake itself
        return mistakes.scaled_dot_product_attention(*args)[cause]

    with pytest.raises(CheckFailure, match="Likely cause: " + re.escape(CAUSES[cause])):
        compare_outputs(student, solutions.scaled_dot_product_attention, inputs, "sdpa",
                        names=("output", "weights"),
                        likely_causes=mistakes.scaled_dot_product_attention)

    def off(*args):  # a wrong answer no variant reproduces: no cause is named
        out, att = solutions.scaled_dot_product_attention(*args)
        return out + 0.5, att

    with pytest.raises(CheckFailure) as failure:
        compare_outputs(off, solutions.scaled_dot_product_attention, inputs, "sdpa",
                        names=("output", "weights"),
                        likely_causes=mistakes.scaled_dot_product_attention)
    assert "Likely cause" not in str(failure.value)


def test_rows_sum_to_one_spots_the_wrong_axis():
    scores = torch.randn(3, 4, 4)
    expect_rows_sum_to_one(torch.softmax(scores, -1))
    with pytest.raises(CheckFailure, match="normalised along that axis"):
        expect_rows_sum_to_one(torch.softmax(scores, -2))


def test_zero_where_masked_and_no_lookahead():
    x = torch.randn(2, 5, 4)
    causal = solutions.causal_mask(5)
    _, att = solutions.scaled_dot_product_attention(x, x, x, mask=causal)
    expect_zero_where_masked(att, causal)
    with pytest.raises(CheckFailure, match="exactly zero"):
        expect_zero_where_masked(torch.softmax(torch.randn(2, 5, 5), -1), causal)

    expect_no_lookahead(lambda x: solutions.scaled_dot_product_attention(
        x, x, x, mask=causal)[0], x)
    off_by_one = torch.ones(5, 5, dtype=torch.bool).tril(1)
    with pytest.raises(CheckFailure, match="saw a later one"):
        expect_no_lookahead(lambda x: solutions.scaled_dot_product_attention(
            x, x, x, mask=off_by_one)[0], x)


def test_permutation_equivariance():
    mha = solutions.MultiHeadAttention(8, 2)
    x = torch.randn(2, 6, 8)
    with torch.no_grad():
        expect_permutation_equivariant(lambda x: mha(x)[0], x)
        with pytest.raises(CheckFailure, match="not permutation equivariant"):
            expect_permutation_equivariant(lambda x: mha(x)[0] + x.cumsum(1), x)


def test_forbidden_builtins_block_and_restore():
    q, k, v = qkv()
    namespace = {"sdpa": F.scaled_dot_product_attention}
    original = F.scaled_dot_product_attention
    with forbidden_builtins(namespace):
        with pytest.raises(CheckFailure, match="switched off"):
            F.scaled_dot_product_attention(q, k, v)
        with pytest.raises(CheckFailure, match="switched off"):
            namespace["sdpa"](q, k, v)  # bound by `from ... import` before grading
        with pytest.raises(CheckFailure, match="switched off"):
            torch.nn.MultiheadAttention(8, 2)(q.float(), q.float(), q.float())
    assert F.scaled_dot_product_attention is original
    assert namespace["sdpa"] is original
    F.scaled_dot_product_attention(q, k, v)  # works again


def test_student_using_builtin_gets_no_points():
    q, k, v = qkv()

    def lazy(q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

    with pytest.raises(CheckFailure, match="switched off"):
        compare_outputs(lazy, lambda *a: solutions.scaled_dot_product_attention(*a)[0],
                        (q, k, v), "sdpa")


def test_an_exercise_whose_text_allows_attention_builtins_lets_them_through():
    # efficient_attention's KV cache: its text switches built-ins off for parts 1-3 only
    from grader.sandbox.forbidden import SOFTMAX

    q, k, v = qkv()

    def lazy(q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

    compare_outputs(lazy, lambda *a: solutions.scaled_dot_product_attention(*a)[0], (q, k, v),
                    "sdpa", attention=False)
    with forbidden_builtins({}, extra=SOFTMAX, attention=False):
        lazy(q, k, v)
        with pytest.raises(CheckFailure, match="switched off"):
            torch.softmax(q, -1)  # what the test does switch off stays off
    with pytest.raises(CheckFailure, match="switched off"):
        compare_gradients(lazy, lambda *a: solutions.scaled_dot_product_attention(*a)[0],
                          (q, k, v), "sdpa", ("q", "k", "v"))  # the default: off


def test_gradients_compared_and_detached_results_caught():
    q, k, v = qkv()
    reference = solutions.scaled_dot_product_attention
    compare_gradients(reference, reference, (q, k, v), "sdpa", ("q", "k", "v"))

    def detached(q, k, v):
        out, att = reference(q, k, v)
        return out.detach(), att.detach()

    with pytest.raises(CheckFailure, match="no gradient reached q|does not require grad"):
        compare_gradients(detached, reference, (q, k, v), "sdpa", ("q", "k", "v"))

    def wrong_grad(q, k, v):  # right values, wrong gradient w.r.t. k
        out, att = reference(q, k.detach(), v)
        return out, att

    with pytest.raises(CheckFailure, match="no gradient reached k"):
        compare_gradients(wrong_grad, reference, (q, k, v), "sdpa", ("q", "k", "v"))


def test_not_implemented_is_reported_plainly():
    def stub(*args):
        raise NotImplementedError()

    with pytest.raises(CheckFailure, match="not implemented yet"):
        compare_outputs(stub, solutions.causal_mask, (3,), "causal_mask")


def test_forbidden_softmax_covers_the_method_and_restores_inheritance():
    from grader.sandbox.forbidden import SOFTMAX

    x = torch.randn(3, 4)
    assert "softmax" not in vars(torch.Tensor)
    with forbidden_builtins({}, extra=SOFTMAX):
        for call in (lambda: x.softmax(-1), lambda: torch.softmax(x, -1),
                     lambda: F.softmax(x, -1), lambda: torch.nn.Softmax(-1)(x)):
            with pytest.raises(CheckFailure, match="switched off"):
                call()
        (x.exp() / x.exp().sum(-1, keepdim=True))  # writing it by hand still works
    assert "softmax" not in vars(torch.Tensor), "the method must be inherited again"
    torch.testing.assert_close(x.softmax(-1).sum(-1), torch.ones(3))


def test_class_report_counts_one_row_per_cause(tmp_path):
    """The same cause named by several tests, or by one student twice, is one row and counts
    each student once; a sentence no cause id has stays a row of its own."""
    import nbformat

    from grader.checks.causes import cause_lines
    from grader.outputs.report import count_causes

    def graded(student, *messages):
        path = tmp_path / student / "self_attention" / "self_attention.ipynb"
        path.parent.mkdir(parents=True)
        cells = [nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
            "error", ename="CheckFailure", evalue=m, traceback=[])]) for m in messages]
        nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
        return path

    paths = [
        graded("ann", "out is wrong." + cause_lines(["not_scaled"]),
               "weights are wrong." + cause_lines(["not_scaled", "mask_inverted"])),
        graded("bob", "y has shape (2,)." + cause_lines(["not_scaled"])),
        graded("cy", "x is wrong.\nLikely cause: something no id has."),
    ]
    assert count_causes(paths) == {"not_scaled": 2, "mask_inverted": 1,
                                   "something no id has": 1}


def test_a_cause_is_named_only_if_its_variant_also_gives_what_the_student_passed():
    # NaN is a symptom many mistakes share: a variant that gives NaN where the student failed,
    # but also where the student was right, is no evidence for its cause
    from grader.checks import all_cases
    from grader.checks.causes import named_causes

    def reference(x):
        return x * 2

    def student(x):  # right on small inputs, NaN on large ones
        return x * 2 if x.max() < 2 else torch.full_like(x, float("nan"))

    def nan_everywhere(x):
        return {"softmax_no_max": torch.full_like(x, float("nan"))}

    def like_the_student(x):
        return {"softmax_no_max": student(x)}

    for causes, named in ((nan_everywhere, []), (like_the_student, ["softmax_no_max"])):
        with pytest.raises(CheckFailure) as failure:
            with all_cases():
                for x in (torch.tensor([1.0, 1.5]), torch.tensor([3.0, 4.0])):
                    compare_outputs(student, reference, (x,), "f", likely_causes=causes)
        assert named_causes(str(failure.value)) == named, str(failure.value)


def test_tokens_and_indices_are_compared_as_positions_and_values_not_as_errors():
    """Integers are right or wrong: the message names how many, the rows, the first position
    and both values, never "largest error 8" (which reads as arithmetic)."""
    expected = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8], [1, 1, 1, 1]])
    got = expected.clone()
    got[1, 2], got[2, 0] = 0, 9
    with pytest.raises(CheckFailure) as failure:
        expect_close(got, expected, "tokens chosen by 6 greedy steps")
    message = str(failure.value)
    assert "is wrong at 2 of 12 entries (in rows 1, 2)" in message, message
    assert "the first at index [1, 2]: expected 7, got 0" in message, message
    assert "error" not in message.lower(), message
    expect_close(expected.clone(), expected, "the same tokens")  # and equal ones pass


class _Noisy(torch.nn.Module):
    """Dropout left on in evaluation mode: a different output at every call."""

    def forward(self, x):
        return torch.nn.functional.dropout(torch.softmax(x, dim=-1), p=0.5)


class _Shifted(torch.nn.Module):
    """Wrong, but the same at every call."""

    def forward(self, x):
        return torch.softmax(x, dim=-1) + 0.1


def test_outputs_that_change_between_two_calls_are_named_as_such():
    """A wrong answer that also changes between two calls on the same input is reported as
    depending on something besides its inputs, not by one call's numbers; a wrong answer that
    is repeatable keeps its numbers, and the second call is made only when something is wrong."""
    x = torch.randn(3, 5, dtype=torch.float64)

    def reference(x):
        return torch.softmax(x, dim=-1)

    with pytest.raises(CheckFailure, match="different outputs on two calls with the same "
                                           "inputs.*random numbers.*state kept"):
        compare_outputs(_Noisy().eval(), reference, (x,), "attention weights")
    with pytest.raises(CheckFailure) as failure:
        compare_outputs(_Shifted(), reference, (x,), "attention weights")
    assert "two calls" not in str(failure.value) and "is wrong at 15 of 15" in str(failure.value)
    calls = []

    def counted(x):
        calls.append(1)
        return reference(x)

    compare_outputs(counted, reference, (x,), "attention weights")
    assert len(calls) == 1, "a right answer was called twice"


def test_weights_that_do_not_fit_are_named_by_parameter_and_shape():
    """A module built with a wrong width, a missing layer or an extra one: the failure lists
    each parameter that does not fit, computed from both state dicts, with advice; never
    PyTorch's size-mismatch traceback."""
    from grader.checks import load_weights

    ref = solutions.MLP(12, 48)
    narrow = solutions.MLP(12, 32)
    with pytest.raises(CheckFailure) as failure:
        load_weights(narrow, ref.state_dict(), "MLP")
    message = str(failure.value)
    assert "linear1.weight: shape (32, 12) in yours, (48, 12) expected" in message, message
    assert "linear2.weight: shape (12, 32) in yours, (12, 48) expected" in message, message
    assert "constructor's arguments" in message and "size mismatch" not in message
    renamed = torch.nn.Module()
    renamed.fc1, renamed.linear2 = torch.nn.Linear(12, 48), torch.nn.Linear(48, 12)
    with pytest.raises(CheckFailure) as failure:
        load_weights(renamed, ref.state_dict(), "MLP")
    assert "missing from yours: linear1.weight, linear1.bias" in str(failure.value)
    assert "in yours, not in the reference: fc1.weight, fc1.bias" in str(failure.value)
    fits = solutions.MLP(12, 48)
    load_weights(fits, ref.state_dict(), "MLP")
    assert all(torch.equal(a, b) for a, b in zip(fits.state_dict().values(),
                                                 ref.state_dict().values(), strict=True))
