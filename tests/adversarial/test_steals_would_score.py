"""A stealing attacker (STEAL in isolation_attacks.py, read_reference_files and
import_solutions in attacks.py) answers with what it steals: were its steal to work, it would
earn points, so its 0 points in the suites proves the steal failed. Here a steal is made to
work: the reference (the source notebook) is planted in the submission itself, which the sandbox
lets the student read, where c2_read_files reads the grader's copy of it. Graded through
`python -m grader autograde`, that attacker must earn full marks; the same attacker without the
plant, nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.course import REPO
from tests.support.classes import released_class

from .attacks import FULL, build
from .isolation_attacks import Plant, isolation_attacks

pytestmark = pytest.mark.slow

SOURCE = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
PLANTED = "planted/reference.ipynb"  # relative: in the submission's own folder


def test_a_steal_that_works_earns_the_points(tmp_path):
    mine = released_class(tmp_path, "soft_select")
    course, released = mine.course, mine.released
    plant = Plant("not-used", tmp_path / "secret", Path(PLANTED), 1, 2, tmp_path / "sock",
                  "not-used", tmp_path / "pwned")
    attack = next(a for a in isolation_attacks(REPO, course.root, plant)
                  if a.name == "c2_read_files")
    build(attack, released, mine.folder("a_without_plant"))
    attack.files = {PLANTED: SOURCE.read_text()}
    build(attack, released, mine.folder("b_planted"))

    run = mine.autograde("--workers", "1", timeout=600)
    status = mine.status()

    assert status["b_planted"]["error"] is None, run.stdout[-2000:] + run.stderr[-2000:]
    assert status["b_planted"]["auto_score"] == FULL, run.stdout[-2000:]
    assert status["a_without_plant"]["auto_score"] == 0, run.stdout[-2000:]
