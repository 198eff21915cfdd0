"""Hidden-test drivers: run a student's function and the reference on the same inputs.

The reference is passed in by the (hidden) test, so nothing here reveals a solution.
"""

from __future__ import annotations

import torch

from .compare import CheckFailure, expect_close
from .forbidden import forbidden_builtins


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _describe(inputs, case: str) -> str:
    shapes = ", ".join(str(tuple(t.shape)) for t in inputs if isinstance(t, torch.Tensor))
    return f"{case}; input shapes {shapes}" if case else f"input shapes {shapes}"


def run_student(fn, inputs, what: str, case: str = "", forbidden=()):
    """Call the student's code with the built-ins switched off; explain any exception.

    forbidden: extra built-ins to switch off (e.g. `forbidden.SOFTMAX`).
    """
    try:
        with forbidden_builtins(extra=forbidden):
            return _as_tuple(fn(*inputs))
    except CheckFailure:
        raise
    except NotImplementedError as e:
        raise CheckFailure(f"{what} is not implemented yet (it raised NotImplementedError)") from e
    except Exception as e:  # the student's bug, reported with the inputs that triggered it
        raise CheckFailure(
            f"{what} raised {type(e).__name__}: {e}\n(on {_describe(inputs, case)})") from e


def compare_outputs(student_fn, reference_fn, inputs, what: str, names=("output",),
                    case: str = "", likely_causes=None, forbidden=()) -> None:
    """Each output of student_fn(*inputs) must match reference_fn(*inputs).

    likely_causes: optional function of the inputs returning {cause: outputs of that mistake}.
    """
    expected = _as_tuple(reference_fn(*inputs))
    got = run_student(student_fn, inputs, what, case, forbidden)
    if len(got) != len(expected):
        raise CheckFailure(f"{what} returned {len(got)} value(s), expected {len(expected)}: "
                           f"{', '.join(names)}")
    for i, (name, g, e) in enumerate(zip(names, got, expected, strict=True)):
        label = f"{what}: {name} ({_describe(inputs, case)})"
        try:
            expect_close(g, e, label)
        except CheckFailure:
            if not likely_causes:
                raise
            # Only now work out the common mistakes' outputs, to name the likely one.
            wrong = {c: _as_tuple(out)[i] for c, out in likely_causes(*inputs).items()}
            expect_close(g, e, label, likely_causes=wrong)
            raise


def compare_gradients(student_fn, reference_fn, inputs, what: str, input_names,
                      student_params=None, reference_params=None, case: str = "",
                      forbidden=()) -> None:
    """Gradients of a random linear function of the outputs must match the reference's,
    with respect to every floating-point input, and to each of reference_params (a
    {name: parameter} dict) in student_params (the student's module, or such a dict)."""
    def leaves():
        return [t.detach().clone().requires_grad_(t.is_floating_point())
                if isinstance(t, torch.Tensor) else t for t in inputs]

    ref_inputs, stu_inputs = leaves(), leaves()
    expected = _as_tuple(reference_fn(*ref_inputs))
    g = torch.Generator().manual_seed(0)
    upstream = [torch.randn(e.shape, generator=g, dtype=e.dtype).to(e.device) for e in expected]
    sum(((e * u).sum() for e, u in zip(expected, upstream, strict=True))).backward()

    got = run_student(student_fn, stu_inputs, what, case, forbidden)
    try:
        sum(((o * u).sum() for o, u in zip(got, upstream, strict=True))).backward()
    except Exception as e:
        raise CheckFailure(f"{what}: backpropagating through your result failed with "
                           f"{type(e).__name__}: {e}") from e
    for name, s, r in zip(input_names, stu_inputs, ref_inputs, strict=False):
        if not (isinstance(r, torch.Tensor) and r.requires_grad):
            continue
        if s.grad is None:
            raise CheckFailure(f"{what}: no gradient reached {name}; is the result detached "
                               "from it (.detach(), .item(), .numpy() or torch.tensor(...))?")
        expect_close(s.grad, r.grad, f"{what}: gradient with respect to {name} ({case})")
    student_grads = _parameter_grads(student_params) if reference_params else {}
    for name, r in (reference_params or {}).items():
        if name not in student_grads:
            raise CheckFailure(f"{what}: your module has no parameter named {name}")
        s_grad = student_grads[name]
        if s_grad is None:
            raise CheckFailure(f"{what}: no gradient reached the parameter {name}")
        expect_close(s_grad, r.grad, f"{what}: gradient with respect to {name} ({case})")


def _parameter_grads(params) -> dict:
    """{name: gradient} of a module's parameters (a module here or in the student's process),
    or of a {name: parameter} dict."""
    from grader.sandbox.remote import Remote

    if isinstance(params, Remote):
        return params._link.parameter_grads(params)
    if isinstance(params, torch.nn.Module):
        params = dict(params.named_parameters())
    return {name: p.grad for name, p in params.items()}
