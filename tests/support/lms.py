"""The files an LMS gives an instructor, as the tests write them: Canvas's gradebook export
(its "Export Entire Gradebook" CSV, which `grader roster` and `grader collect --roster` read)."""

from __future__ import annotations

import csv
from pathlib import Path

# Canvas's leading columns, in every gradebook CSV it exports or imports.
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_gradebook(path: Path, rows, *, assignment: str = "Quiz 1 (1234)", points: str = "5",
                     scores: tuple[str, str] = ("4", "80"), encoding: str = "utf-8-sig") -> Path:
    """A gradebook CSV as Canvas exports it: its five student columns, one assignment column
    (ASSIGNMENT, worth POINTS) and Current Score; the Points Possible row; each of ROWS (the five
    columns) with SCORES; last, Canvas's Test Student."""
    with open(path, "w", newline="", encoding=encoding) as f:
        out = csv.writer(f)
        out.writerow([*CANVAS_COLUMNS, assignment, "Current Score"])
        out.writerow(["    Points Possible", "", "", "", "", points, "(read only)"])
        for row in rows:
            out.writerow([*row, *scores])
        out.writerow(["Student, Test", "999", "", "", "Section A", "", ""])
    return path
