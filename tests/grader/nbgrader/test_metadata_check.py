"""Our CheckCellMetadata (grader/nbgrader/patches.py) is nbgrader's, with the schema's
validator built
once: it must accept and refuse exactly the notebooks nbgrader's own step does."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheck

from grader.course import REPO
from grader.nbgrader.patches import CheckCellMetadata as OurCheck

SOURCE = REPO / "assignments" / "self_attention" / "self_attention.ipynb"


def _graded(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def _corrupt(change):
    nb = nbformat.read(SOURCE, as_version=4)
    change(nb)
    return nb


CASES = {
    "untouched": lambda nb: None,
    "points not a number": lambda nb: _graded(nb).metadata.nbgrader.update(points="many"),
    "grade not a boolean": lambda nb: _graded(nb).metadata.nbgrader.update(grade="yes"),
    "no grade id": lambda nb: _graded(nb).metadata.nbgrader.pop("grade_id"),
    "empty grade id": lambda nb: _graded(nb).metadata.nbgrader.update(grade_id=""),
    "no points": lambda nb: _graded(nb).metadata.nbgrader.pop("points"),
    "schema too old": lambda nb: _graded(nb).metadata.nbgrader.update(schema_version=1),
    "schema too new": lambda nb: _graded(nb).metadata.nbgrader.update(schema_version=9),
    "markdown grade, not solution": lambda nb: nb.cells.append(nbformat.v4.new_markdown_cell(
        "x", metadata={"nbgrader": {"grade": True, "solution": False, "locked": False,
                                    "points": 1, "grade_id": "md", "schema_version": 3}})),
    "duplicate grade id": lambda nb: nb.cells.append(copy.deepcopy(_graded(nb))),
    "task cell in code": lambda nb: nb.cells.append(nbformat.v4.new_code_cell(
        "x", metadata={"nbgrader": {"grade": False, "solution": False, "locked": True,
                                    "task": True, "points": 1, "grade_id": "t",
                                    "schema_version": 3}})),
}


def _verdict(step, nb):
    try:
        step().preprocess(nb, {})
        return "accepted"
    except Exception as e:
        return type(e).__name__


@pytest.mark.parametrize("case", CASES)
def test_same_verdict_as_nbgraders_own_step(case):
    ours = _verdict(OurCheck, _corrupt(CASES[case]))
    theirs = _verdict(NbgraderCheck, _corrupt(CASES[case]))
    assert ours == theirs
    assert (ours == "accepted") == (case == "untouched")  # every corruption is refused


def test_the_compiled_schema_check_accepts_exactly_what_jsonschema_accepts():
    # A cell the compiled validator (fastjsonschema) lets through skips jsonschema's: it must
    # never let through one that jsonschema refuses. Each field set to values of the wrong type
    # (booleans for numbers and numbers for booleans included), out of range or badly formed,
    # with each required field missing in turn.
    import jsonschema
    from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

    from grader.nbgrader.patches import _MetadataValidator, _SchemaOnce

    schema = MetadataValidatorV3().schema
    reference = jsonschema.validators.validator_for(schema)(schema)
    base = {"schema_version": 3, "grade": True, "locked": False, "solution": False,
            "task": False, "grade_id": "a", "points": 1}
    values = {"schema_version": [3, 3.0, True, "3", 2, 4, None],
              "grade": [True, 1, 0, "yes", None], "points": [1, 1.5, True, -1, "1", None, 0],
              "grade_id": ["a", "a b", "", 3, None, "é"], "checksum": ["0" * 32, "0" * 31, 5],
              "cell_type": ["code", "other", 1], "extra": [1]}
    checked = refused = 0
    for key, options in values.items():
        for value in options:
            for drop in (None, *base):
                metadata = {**base, key: value}
                metadata.pop(drop, None)
                if metadata.get("schema_version") != 3:  # nbgrader's own version check first
                    continue
                cell = nbformat.v4.new_code_cell("x", metadata={"nbgrader": metadata})
                try:  # the schema's step alone (nbgrader's own rules follow it)
                    _SchemaOnce.validate_cell(_MetadataValidator(), cell)
                    ours = True
                except jsonschema.ValidationError:
                    ours = False
                assert ours == reference.is_valid(metadata), metadata
                # a check changes nothing (the schema's defaults are not filled in)
                assert cell.metadata["nbgrader"] == metadata, cell.metadata["nbgrader"]
                checked += 1
                refused += not ours
    assert checked > 150 and refused > 100, (checked, refused)
