"""Every exercise in the lectures follows the course's convention.

A markdown cell beginning `**Try it.**` asks the question; the code cell right after it (and
any worked-answer cells that follow that one) holds the worked answer: its source begins
`# Worked answer`, it is tagged `worked-answer` and `hide-cell` (behind a toggle on the site),
its jupyter metadata collapses it in JupyterLab, and it asserts what it claims. No worked answer
stands without its question. (tests/site checks that the site shows each behind a toggle.)
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))

TRY_IT = "**Try it.**"
# An exercise starts a paragraph; "a **Try it.** cell asks ..." in a sentence only mentions one.
EXERCISE = re.compile(r"^\s*\*\*Try it\.\*\*", re.MULTILINE)
FIRST_LINE = "# Worked answer"
TAGS = ("worked-answer", "hide-cell")
COLLAPSED = {"source_hidden": True, "outputs_hidden": True}


def is_worked_answer(cell) -> bool:
    return cell.cell_type == "code" and "worked-answer" in cell.metadata.get("tags", [])


def answer_problems(cell) -> list[str]:
    """What one worked-answer cell lacks."""
    problems = []
    if not cell.source.startswith(FIRST_LINE):
        problems.append(f"does not begin with {FIRST_LINE!r}")
    missing = [t for t in TAGS if t not in cell.metadata.get("tags", [])]
    if missing:
        problems.append(f"lacks the tag(s) {', '.join(missing)}")
    jupyter = cell.metadata.get("jupyter", {})
    if any(jupyter.get(key) is not True for key in COLLAPSED):
        problems.append(f"is not collapsed (jupyter metadata {jupyter}, want {COLLAPSED})")
    return problems


def exercise_problems(nb) -> list[str]:
    """Every way the notebook breaks the exercise convention, one line each (empty if none)."""
    problems = []
    cells = nb.cells
    for i, cell in enumerate(cells):
        found = EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if not found:
            continue
        question = cell.source[found.start():].strip().splitlines()[0][:70]
        where = f"cell {i} ({question!r})"
        if not cell.source.lstrip().startswith(TRY_IT):
            problems.append(f"{where}: {TRY_IT} must begin its markdown cell")
        answers = []
        for nxt in cells[i + 1:]:
            if nxt.cell_type != "code" or (answers and not is_worked_answer(nxt)):
                break
            answers.append(nxt)  # the first code cell, then every worked answer after it
        if not answers:
            problems.append(f"{where}: not followed directly by a worked-answer code cell")
            continue
        for k, answer in enumerate(answers):
            problems += [f"{where}: worked answer {k + 1} {p}" for p in answer_problems(answer)]
        if not any("assert" in a.source for a in answers):
            problems.append(f"{where}: the worked answer asserts nothing it claims")
    for i, cell in enumerate(cells):
        if not is_worked_answer(cell):
            continue
        j = i - 1
        while j >= 0 and is_worked_answer(cells[j]):
            j -= 1
        if j < 0 or cells[j].cell_type != "markdown" or not EXERCISE.search(cells[j].source):
            problems.append(f"cell {i}: a worked answer with no {TRY_IT} question right before")
    return problems


@pytest.mark.parametrize("lecture", LECTURES, ids=[p.stem for p in LECTURES])
def test_every_try_it_has_a_collapsed_worked_answer(lecture):
    nb = nbformat.read(lecture, as_version=4)
    problems = exercise_problems(nb)
    assert not problems, f"{lecture.name}:\n" + "\n".join(problems)


# The checker itself, on small notebooks written to disk and read back as the lectures are.

def answer(source="# Worked answer\nx = 2 + 2\nassert x == 4", tags=TAGS, jupyter=COLLAPSED):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    if jupyter is not None:
        cell.metadata["jupyter"] = dict(jupyter)
    return cell


def question(text="**Try it.** What is 2 + 2?"):
    return nbformat.v4.new_markdown_cell(text)


def round_trip(tmp_path: Path, cells) -> nbformat.NotebookNode:
    path = tmp_path / "lecture.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lecture"), *cells])
    nbformat.write(nb, path)
    return nbformat.read(path, as_version=4)


def test_a_good_exercise_passes(tmp_path):
    second = answer("# Worked answer\n# the same, the long way\nassert sum([2, 2]) == 4")
    nb = round_trip(tmp_path, [question(), answer(), second,
                               nbformat.v4.new_code_cell("print('the lecture goes on')")])
    assert exercise_problems(nb) == []


def test_prose_that_mentions_the_convention_is_no_exercise(tmp_path):
    intro = nbformat.v4.new_markdown_cell("Each **Try it.** cell asks a question.")
    nb = round_trip(tmp_path, [intro, nbformat.v4.new_code_cell("x = 1")])
    assert exercise_problems(nb) == []


BAD = {
    "no answer": ([question(), nbformat.v4.new_markdown_cell("More prose.")],
                  "not followed directly"),
    "untagged": ([question(), answer(tags=())], "lacks the tag(s) worked-answer, hide-cell"),
    "not hidden on the site": ([question(), answer(tags=("worked-answer",))],
                               "lacks the tag(s) hide-cell"),
    "not collapsed": ([question(), answer(jupyter=None)], "is not collapsed"),
    "only the source collapsed": ([question(), answer(jupyter={"source_hidden": True})],
                                  "is not collapsed"),
    "first line": ([question(), answer("x = 4  # Worked answer\nassert x == 4")],
                   "does not begin with '# Worked answer'"),
    "asserts nothing": ([question(), answer("# Worked answer\nprint(2 + 2)")],
                        "asserts nothing"),
    "question mid-cell": ([question("Some prose first.\n\n**Try it.** What is 2 + 2?"),
                           answer()], "must begin its markdown cell"),
    "orphan answer": ([nbformat.v4.new_markdown_cell("Prose."), answer()],
                      "no **Try it.** question right before"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_exercise_is_named(tmp_path, case):
    cells, expected = BAD[case]
    problems = exercise_problems(round_trip(tmp_path, cells))
    assert problems, f"{case}: not caught"
    assert any(expected in p for p in problems), problems
