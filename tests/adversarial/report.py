"""The class report's "Flags for review" section, made through the CLI, for the suites here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from grader.course import REPO


def flags_section(course_root: Path, assignment: str, folder: Path) -> str:
    page = folder / "report.html"
    run = subprocess.run([sys.executable, "-m", "grader", "--course", str(course_root), "report",
                          assignment, "--to", str(page)], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    text = page.read_text()
    return text[text.index("Flags for review"):text.index("<h2>Students")]
