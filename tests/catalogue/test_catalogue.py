"""Every catalogued mistake loses points on a hidden test, and most failures name the cause.

For speed, each assignment runs in one kernel: the source notebook (with its hidden tests) is
executed once, then for each mistake the edited solution cell is run, every test cell is run
again and its outcome recorded, and the correct cell is restored. Training cells are skipped:
they test the whole pipeline, not one mistake.
"""

from collections import defaultdict

import nbformat
import pytest
from catalogue import MISTAKES  # tests/catalogue/ is on sys.path (pytest's rootdir-less import)
from nbclient import NotebookClient

from grader.course import KERNEL_ARGS, REPO

pytestmark = pytest.mark.slow
SKIP = {"train", "test_training"}  # training runs: minutes of CPU, and not about one mistake


def grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def is_test(cell):
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and meta.get("grade") and not meta.get("solution")


def failures(cell) -> str | None:
    errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
    return "\n".join(errors) or None


def run_assignment(assignment, mistakes, tmp_path):
    """{mistake id: {test grade_id: failure message}}, plus the baseline under key None."""
    path = REPO / "assignments" / assignment / f"{assignment}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "code" and grade_id(c) not in SKIP]
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            extra_arguments=KERNEL_ARGS,
                            resources={"metadata": {"path": str(tmp_path)}})
    tests = [(i, c) for i, c in enumerate(nb.cells) if is_test(c)]
    by_id = {grade_id(c): (i, c) for i, c in enumerate(nb.cells)}
    outcome = {}
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        outcome[None] = {grade_id(c): failures(c) for _, c in tests if failures(c)}
        for mistake in mistakes:
            index, cell = by_id[mistake.edit.cell]
            correct = cell.source
            assert mistake.edit.old in correct, f"{mistake.id}: edit target not found"
            cell.source = correct.replace(mistake.edit.old, mistake.edit.new)
            client.execute_cell(cell, index)
            for i, test in tests:
                client.execute_cell(test, i)
            outcome[mistake.id] = {grade_id(c): failures(c) for _, c in tests if failures(c)}
            cell.source = correct
            client.execute_cell(cell, index)
    hidden = {grade_id(c) for _, c in tests if "BEGIN HIDDEN TESTS" in c.source}
    return outcome, hidden


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    groups = defaultdict(list)
    for mistake in MISTAKES:
        groups[mistake.assignment].append(mistake)
    results = {}
    for assignment, mistakes in groups.items():
        results[assignment] = run_assignment(assignment, mistakes,
                                             tmp_path_factory.mktemp(assignment))
    return results


def test_catalogue_is_large_and_covers_every_assignment():
    assert len(MISTAKES) >= 25
    assert len({m.id for m in MISTAKES}) == len(MISTAKES)
    assert {m.assignment for m in MISTAKES} == {p.parent.name for p in
                                                (REPO / "assignments").glob("*/*.ipynb")}


@pytest.mark.parametrize("assignment", sorted({m.assignment for m in MISTAKES}))
def test_correct_solution_passes_every_test(outcomes, assignment):
    outcome, _ = outcomes[assignment]
    assert outcome[None] == {}, f"the source solution fails: {outcome[None]}"


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.id for m in MISTAKES])
def test_mistake_loses_points_on_a_hidden_test(outcomes, mistake):
    outcome, hidden = outcomes[mistake.assignment]
    failed = outcome[mistake.id]
    assert hidden & set(failed), (
        f"{mistake.id}: no hidden test failed (failed: {sorted(failed) or 'nothing'})")


def test_most_failures_name_the_likely_cause(outcomes):
    named, missed = [], []
    for mistake in MISTAKES:
        outcome, _ = outcomes[mistake.assignment]
        messages = "\n".join(outcome[mistake.id].values()).lower()
        ok = mistake.cause is not None and mistake.cause.lower() in messages
        (named if ok else missed).append(mistake.id)
    share = len(named) / len(MISTAKES)
    print(f"\n{len(named)} of {len(MISTAKES)} mistakes named ({share:.0%}); not named: {missed}")
    assert share >= 0.8, f"only {share:.0%} named; not named: {missed}"
