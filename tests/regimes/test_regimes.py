"""Every function's hidden tests build every regime of input that applies to it
(tests/regimes/matrix.py): run each assignment's source notebook (its solutions, then every
test cell, hidden ones included) in this process, watch each comparison the tests make
(grader.checks.reference.observing), and fail on a regime no comparison built."""

from __future__ import annotations

import functools
import re

import nbformat
import pytest
import torch
from matrix import KNOWN_GAPS, MATRIX  # tests/regimes/ is on sys.path (rootdir-less import)

from grader.checks.reference import observing
from grader.course import REPO

SKIP = {"train", "test_training"}  # training runs: minutes of CPU, no comparison to watch


def _module(reference_fn):
    """The reference module a comparison runs: the function itself, a partial or a bound
    method of one, or one a function takes as a default argument (`score=score`)."""
    if isinstance(reference_fn, functools.partial):
        reference_fn = reference_fn.func
    if isinstance(reference_fn, torch.nn.Module):
        return reference_fn
    owner = getattr(reference_fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        return owner
    defaults = getattr(reference_fn, "__defaults__", None) or ()
    return next((d for d in defaults if isinstance(d, torch.nn.Module)), None)


def _function(assignment: str, what: str) -> str | None:
    """The function of the matrix a comparison's `what` names ("causal tiled_attention",
    "MultiHeadAttention: weights" -> the function)."""
    for name in MATRIX[assignment]:
        if re.search(rf"(?<![\w.]){re.escape(name)}\b", what):
            return name
    return None


def _describe(assignment):
    def describe(kind, what, reference_fn, inputs):
        name = _function(assignment, what)
        if name is None:
            return None
        module = _module(reference_fn)
        return name, {regime for regime, holds in MATRIX[assignment][name].items()
                      if holds(kind, inputs, module)}
    return describe


@functools.cache
def covered(assignment: str) -> dict[str, tuple[int, set[str]]]:
    """{function: (its comparisons, the regimes they built)}, from one run of the source
    notebook."""
    nb = nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)
    namespace = {"__name__": "__main__"}
    found: dict[str, tuple[int, set[str]]] = {name: (0, set()) for name in MATRIX[assignment]}
    with observing(_describe(assignment)) as seen:
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.cell_type != "code" or grade_id in SKIP:
                continue
            exec(compile(cell.source, f"<{assignment} {grade_id}>", "exec"), namespace)
    for entry in seen:
        if entry is not None:
            name, regimes = entry
            found[name] = (found[name][0] + 1, found[name][1] | regimes)
    return found


CASES = [(a, f, r) for a, functions in MATRIX.items() for f, regimes in functions.items()
         for r in regimes]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", sorted(MATRIX))
def test_every_function_of_the_matrix_is_compared_at_all(assignment):
    """A function the matrix names that no comparison reached (renamed, its test rewritten
    without compare_outputs) would pass every regime test below vacuously."""
    empty = [f for f, (comparisons, _) in covered(assignment).items() if not comparisons]
    assert not empty, f"{assignment}: no comparison of {empty} was seen"


@pytest.mark.slow
@pytest.mark.parametrize("assignment, function, regime", CASES,
                         ids=[f"{a}-{f}-{r}" for a, f, r in CASES])
def test_the_hidden_tests_build_the_regime(assignment, function, regime):
    built = regime in covered(assignment)[function][1]
    if (assignment, function, regime) in KNOWN_GAPS:
        assert not built, (f"{function} is now tested {regime}: take it off "
                           "tests/regimes/matrix.py's KNOWN_GAPS")
        pytest.xfail(f"known gap: the hidden tests of {function} do not build {regime} yet")
    assert built, (f"no hidden test of {assignment}'s {function} builds {regime}: add a case "
                   "that does (tests/regimes/matrix.py says why it applies)")
