"""Hidden-test drivers: run a student's function and the reference on the same inputs.

The reference is passed in by the (hidden) test, so nothing here reveals a solution. A failure
names a cause only when that mistake's variant reproduces the student's outputs: on the failing
input, and, inside `all_cases()`, on every input tried, the ones the student passed included.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

import torch

from grader.judge.memo import MEMO
from grader.sandbox.codec import unchanged
from grader.sandbox.forbidden import announced, forbidden_builtins
from grader.sandbox.probe import probing

from .causes import cause_lines
from .compare import CheckFailure, expect_close, matches
from .hints import hint_for

_ACTIVE: list[list] = []  # the cases recorded by the all_cases() blocks now open
_WATCHERS: list = []  # the observing() blocks now open (the regime meta-test's)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _describe(inputs, case: str) -> str:
    """Where the failure happened: the case and the input shapes ('' when there is neither)."""
    shapes = ", ".join(str(tuple(t.shape)) for t in inputs if isinstance(t, torch.Tensor))
    parts = [p for p in (case, shapes and f"input shapes {shapes}") if p]
    return "; ".join(parts)


def _in(where: str) -> str:
    return f" ({where})" if where else ""


def _ordinal(i: int) -> str:
    return ["first", "second", "third", "fourth", "fifth"][i] if i < 5 else f"{i + 1}th"


def _explain_error(what, e, where) -> CheckFailure:
    text = f"{what} raised {type(e).__name__}: {e}"
    found = hint_for(str(e))
    if found is not None:
        hint, cause = found
        text += f"\nHint: {hint}" + ("" if hint.endswith(("?", ".")) else ".") + (
            cause_lines([cause]) if cause else "")
    return CheckFailure(text + (f"\n(on {where})" if where else ""))


def run_student(fn, inputs, what: str, case: str = "", forbidden=(), attention: bool = True):
    """Call the student's code with the built-ins switched off; explain any exception, and fail
    if it changed one of its inputs.

    Floating-point inputs go in as tensors that require gradients, so that changing one in place
    is an error wherever the code runs (here or in the student's process); every input is also
    compared with what it was given afterwards, where the code ran (the student's process
    compares its own copies).
    forbidden: extra built-ins to switch off (e.g. `forbidden.SOFTMAX`).
    attention: switch off PyTorch's attention built-ins too (False only where the exercise's
    text allows them).
    """
    from grader.sandbox.codec import same_layout  # (a transposed or sliced input stays one)

    where = _describe(inputs, case)

    def copies(probe):
        return [same_layout(t).requires_grad_(probe and t.is_floating_point())
                if isinstance(t, torch.Tensor) else t for t in inputs]

    from grader.judge.remote import Remote, call_reporting_changes

    remote = isinstance(fn, Remote)
    # A handle on the student's process: the built-ins are switched off there, where the code
    # runs, and that process reports which inputs the code changed (it holds copies of these).
    switched_off = announced if remote else forbidden_builtins
    changed = []

    def call(args):
        with switched_off(extra=forbidden, attention=attention):
            if remote:  # (the student's process watches the devices itself)
                value, changed[:] = call_reporting_changes(fn, args)
                return _as_tuple(value)
            with probing(args):  # a device check's call (devices.py)
                return _as_tuple(fn(*args))

    probe = torch.is_grad_enabled()
    args = copies(probe)
    try:
        try:
            got = call(args)
        except (CheckFailure, NotImplementedError):
            raise
        except Exception as e:
            if not probe or "leaf Variable" in str(e):
                raise
            args = copies(False)  # maybe the code cannot take tensors that require gradients
            got = call(args)
    except CheckFailure:
        raise
    except NotImplementedError as e:
        raise CheckFailure(f"{what} is not implemented yet (it raised NotImplementedError)") from e
    except Exception as e:  # the student's bug, reported with the inputs that triggered it
        raise _explain_error(what, e, where) from e
    if not remote:
        changed[:] = [i for i, (before, after) in enumerate(zip(inputs, args, strict=True))
                      if isinstance(before, torch.Tensor) and not unchanged(before, after)]
    if changed:
        raise CheckFailure(
            f"{what} changed its {_ordinal(changed[0])} argument in place: after the call it no "
            "longer holds the values it was given. Work on a new tensor (x = x - ...) instead of "
            "changing the caller's (x -= ..., x[...] = ..., masked_fill_)"
            + _in(where) + cause_lines(["inplace_input"]))
    return tuple(g.detach() if isinstance(g, torch.Tensor) else g for g in got)


@dataclass
class _Case:
    got: tuple
    expected: tuple
    message: str | None  # what is wrong, or None when the case passed
    predict: object = None  # () -> what `predicted` holds, called when first asked

    @functools.cached_property
    def predicted(self) -> dict | None:
        """{cause: outputs of that mistake}, worked out after the block; None when the reference
        no longer gives `expected` then (the test changed it meanwhile)."""
        return self.predict() if self.predict is not None else {}

    def reproduced_by(self, cause) -> bool:
        """Whether a variant of `cause` (ids 'cause' or 'cause#variant') gives the student's
        outputs; a cause with no variant here behaves like the reference. A case whose
        mistakes could not be worked out vouches for no cause."""
        if self.predicted is None:
            return False
        variants = [out for k, out in self.predicted.items() if k.split("#")[0] == cause]
        return any(len(out) == len(self.got) and all(
            matches(g, p) for g, p in zip(self.got, out, strict=True))
            for out in variants or [self.expected])

    @functools.cached_property
    def only_nan_wrong(self) -> bool:
        """Whether the student's outputs are wrong only where they hold NaN: a symptom many
        slips share (0 x inf, inf - inf), which tells none of them apart."""
        wrong = False
        for g, e in zip(self.got, self.expected, strict=False):
            if not (isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)) or \
                    g.shape != e.shape or not g.is_floating_point():
                return False
            e = e.to(g.dtype)
            off = ~torch.isclose(g, e, equal_nan=True, rtol=0, atol=0)
            if bool((off & ~torch.isnan(g)).any()):
                return False
            wrong = wrong or bool(off.any())
        return wrong


@contextlib.contextmanager
def observing(describe):
    """Hand every comparison made in the block to describe(kind, what, reference_fn, inputs)
    ("outputs" or "gradients") and collect what it returns, as the comparison starts: the
    regime meta-test (tests/regimes/) reads which inputs the hidden tests build."""
    seen: list = []
    watcher = (describe, seen)
    _WATCHERS.append(watcher)
    try:
        yield seen
    finally:
        _WATCHERS.remove(watcher)


def _watch(kind: str, what: str, reference_fn, inputs) -> None:
    for describe, seen in _WATCHERS:
        seen.append(describe(kind, what, reference_fn, tuple(inputs)))


@contextlib.contextmanager
def all_cases():
    """Run every compare_outputs in the block before failing: the first failing case is
    reported, naming only the causes whose variants reproduce the student's outputs on every
    case of the block, the ones it passed included (so inputs where two mistakes coincide do
    not decide, and a symptom that many mistakes share, such as NaN, is not enough where the
    variant also fails a case the student passed)."""
    cases = []
    _ACTIVE.append(cases)
    try:
        yield
    except CheckFailure:
        if any(c.message for c in cases):  # report the first failure, not a later error
            _raise_first(cases)
        raise
    finally:
        _ACTIVE.remove(cases)
    _raise_first(cases)


def _raise_first(cases) -> None:
    failed = [c for c in cases if c.message]
    if not failed:
        return
    named = (k.split("#")[0] for case in cases for k in case.predicted or {})
    causes = [c for c in dict.fromkeys(named) if all(case.reproduced_by(c) for case in cases)]
    # NaN alone, on every case, tells no cause apart (a sum started at -inf, an exp left out, a
    # rescale flipped all give it everywhere); NaN on some inputs beside right answers on
    # others is a pattern a cause can be checked against
    if all(case.only_nan_wrong for case in failed) and len(failed) == len(cases):
        causes = []
    raise CheckFailure(failed[0].message + cause_lines(causes))


def _first_difference(got, expected, names, what, where) -> str | None:
    if len(got) != len(expected):
        return (f"{what} returned {len(got)} value(s), expected {len(expected)}: "
                f"{', '.join(names)}")
    for name, g, e in zip(names, got, expected, strict=False):
        try:
            expect_close(g, e, f"{what}: {name}{_in(where)}")
        except CheckFailure as failure:
            return str(failure)
    return None


def compare_outputs(student_fn, reference_fn, inputs, what: str, names=("output",),
                    case: str = "", likely_causes=None, forbidden=(),
                    attention: bool = True) -> None:
    """Each output of student_fn(*inputs) must match reference_fn(*inputs).

    likely_causes: optional function of the inputs returning {cause id: outputs of that mistake}
    (a cause it leaves out behaves like the reference on these inputs).
    Both the reference's and the mistakes' outputs are remembered for the next notebook graded
    in this process where that is safe (memo.py).
    forbidden, attention: the built-ins switched off while the student's code runs (run_student).
    """
    if _WATCHERS:
        _watch("outputs", what, reference_fn, inputs)
    expected = tuple(e.detach() if isinstance(e, torch.Tensor) else e
                     for e in _as_tuple(MEMO.call(reference_fn, *inputs)))
    active = _ACTIVE[-1] if _ACTIVE else None
    try:
        got = run_student(student_fn, inputs, what, case, forbidden, attention)
    except CheckFailure:
        if active is not None and any(c.message for c in active):
            _raise_first(active)
        raise
    message = _first_difference(got, expected, names, what, _describe(inputs, case))
    if message is not None:
        message = _not_repeatable(student_fn, inputs, what, case, forbidden, attention,
                                  got) or message
    record = _Case(got, expected, message)
    if likely_causes:  # the mistakes' outputs, worked out only if some case of the block fails
        def predict():
            with torch.no_grad():
                again = _as_tuple(MEMO.call(reference_fn, *inputs))
                if len(again) != len(expected) or not all(
                        matches(a, e) for a, e in zip(again, expected, strict=True)):
                    return None  # the test changed its reference since: this case cannot tell
                return {c: tuple(o.detach() if isinstance(o, torch.Tensor) else o
                                 for o in _as_tuple(out))
                        for c, out in MEMO.call(likely_causes, *inputs).items()
                        if out is not None}
        record.predict = predict
    if active is not None:
        active.append(record)
    else:
        _raise_first([record])


def _not_repeatable(student_fn, inputs, what, case, forbidden, attention, got) -> str | None:
    """When the student's outputs are wrong, whether a second call on the same inputs gives
    other outputs: then what is wrong is that they depend on something besides the inputs, and
    the numbers of one call would only mislead (dropout left on in evaluation mode shows as
    "row sums to 0.435"). Seen, not guessed: two calls, compared exactly."""
    try:
        again = run_student(student_fn, inputs, what, case, forbidden, attention)
    except CheckFailure:
        return None
    if len(again) == len(got) and all(
            not isinstance(a, torch.Tensor) or not isinstance(g, torch.Tensor)
            or unchanged(g, a) for a, g in zip(again, got, strict=True)):
        return None
    where = _describe(inputs, case)
    return (f"{what} gave different outputs on two calls with the same inputs{_in(where)}: "
            "they depend on something besides the inputs, either random numbers (dropout "
            "still active in evaluation mode, or a torch.rand... call) or state kept from an "
            "earlier call. Make the output a function of the inputs (and the weights) alone.")


def compare_gradients(student_fn, reference_fn, inputs, what: str, input_names,
                      student_params=None, reference_params=None, case: str = "",
                      forbidden=(), attention: bool = True) -> None:
    """Gradients of a random linear function of the outputs must match the reference's,
    with respect to every floating-point input, and to each of reference_params (a
    {name: parameter} dict) in student_params (the student's module, or such a dict).
    forbidden, attention: the built-ins switched off while the student's code runs (run_student)."""
    from grader.sandbox.codec import same_layout  # (a transposed or sliced input stays one)

    if _WATCHERS:
        _watch("gradients", what, reference_fn, inputs)

    def leaves():
        return [same_layout(t).requires_grad_(t.is_floating_point())
                if isinstance(t, torch.Tensor) else t for t in inputs]

    where = _in(case)
    ref_inputs, stu_inputs = leaves(), leaves()
    expected = _as_tuple(reference_fn(*ref_inputs))
    g = torch.Generator().manual_seed(0)
    upstream = [torch.randn(e.shape, generator=g, dtype=e.dtype).to(e.device) for e in expected]
    sum(((e * u).sum() for e, u in zip(expected, upstream, strict=True))).backward()

    try:
        with forbidden_builtins(extra=forbidden, attention=attention):
            got = _as_tuple(student_fn(*stu_inputs))
        sum(((o * u).sum() for o, u in zip(got, upstream, strict=True))).backward()
    except CheckFailure:
        raise
    except Exception as e:
        raise _explain_error(f"{what}, with gradients", e, case) from e
    for name, s, r in zip(input_names, stu_inputs, ref_inputs, strict=False):
        if not (isinstance(r, torch.Tensor) and r.requires_grad):
            continue
        if s.grad is None:
            raise CheckFailure(f"{what}: no gradient reached {name}; is the result detached "
                               "from it (.detach(), .item(), .numpy() or torch.tensor(...))?")
        expect_close(s.grad, r.grad, f"{what}: gradient with respect to {name}{where}")
    student_grads = _parameter_grads(student_params) if reference_params else {}
    for name, r in (reference_params or {}).items():
        if name not in student_grads:
            raise CheckFailure(f"{what}: your module has no parameter named {name}")
        s_grad = student_grads[name]
        if s_grad is None:
            raise CheckFailure(f"{what}: no gradient reached the parameter {name}")
        expect_close(s_grad, r.grad, f"{what}: gradient with respect to {name}{where}")


def _parameter_grads(params) -> dict:
    """{name: gradient} of a module's parameters (a module here or in the student's process),
    or of a {name: parameter} dict."""
    from grader.judge.remote import Remote

    if isinstance(params, Remote):
        return params._link.parameter_grads(params)
    if isinstance(params, torch.nn.Module):
        params = dict(params.named_parameters())
    return {name: p.grad for name, p in params.items()}


def load_weights(module, state: dict, what: str) -> None:
    """Give the student's module the reference's weights (`state`, a state dict). When the two
    do not fit, fail saying which parameters differ, by name and by shape, worked out here from
    both state dicts (PyTorch's own error text comes from the student's process, and reads as a
    traceback: "size mismatch for linear1.weight: copying a param with shape...")."""
    try:
        theirs = module.state_dict()
    except Exception as e:  # noqa: BLE001 - the student's module: any failure is theirs
        raise _explain_error(f"{what}.state_dict()", e, "") from None
    if isinstance(theirs, dict) and all(isinstance(v, torch.Tensor) for v in theirs.values()):
        misfit = _misfit({k: tuple(v.shape) for k, v in theirs.items()},
                         {k: tuple(v.shape) for k, v in state.items()})
        if misfit:
            raise CheckFailure(
                f"{what}'s parameters do not fit the reference's, so the reference's weights "
                "cannot be given to yours to compare the two:\n" + "\n".join(misfit)
                + "\nBuild each layer from the constructor's arguments (its sizes), under the "
                "names the exercise gives.")
    try:
        module.load_state_dict(state)
    except Exception as e:  # noqa: BLE001
        raise CheckFailure(f"the reference's weights could not be loaded into {what} "
                           f"({type(e).__name__}); keep the layer names the exercise gives"
                           ) from None


def _misfit(theirs: dict, ours: dict, most: int = 6) -> list[str]:
    """Lines naming each parameter whose shape differs, each one missing and each extra."""
    lines = [f"  {name}: shape {_shape(theirs[name])} in yours, {_shape(ours[name])} expected"
             for name in ours if name in theirs and theirs[name] != ours[name]]
    missing = [name for name in ours if name not in theirs]
    extra = [name for name in theirs if name not in ours]
    if missing:
        lines.append("  missing from yours: " + _names(missing, most))
    if extra:
        lines.append("  in yours, not in the reference: " + _names(extra, most))
    return lines[:most] + ([f"  ... and {len(lines) - most} more"] if len(lines) > most else [])


def _shape(shape: tuple) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def _names(names: list[str], most: int) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                      else "")
