"""What `grader check` reads from a notebook's cells: how to name a cell for a student, where a
kernel's traceback points, and whether an answer is still the released stub.

Every reading here is of evidence in the notebook or the run (the cell's text, the frames
"Cell In[n], line k" of IPython's traceback): nothing is inferred from a message's wording
beyond the name a NameError quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# nbgrader's stubs in a released notebook: grader/course.py sets the code stub (ClearSolutions.
# code_stub), and a written answer keeps nbgrader's default text stub.
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
TEXT_STUB = "YOUR ANSWER HERE"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_FRAME = re.compile(r"Cell In\[(\d+)\], line (\d+)")
_SYNTAX = ("SyntaxError", "IndentationError", "TabError")


@dataclass(frozen=True)
class Frame:
    cell: int  # index in the notebook
    line: int  # 1-based, in that cell's source


@dataclass
class CellFailure:
    kind: str  # "error", "stopped" (time limit, or the kernel died), "unanswered"
    cell: str  # the cell, described for the student
    message: str
    ename: str = ""
    line: int | None = None  # where in the cell itself, when the traceback says
    machine: bool = False  # an unchanged provided cell that failed before any student code ran


def describe(nb, index: int) -> str:
    """A cell as a student finds it in JupyterLab: its role, nbgrader id, position and first
    line (a written answer: the question above it)."""
    cell = nb.cells[index]
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if cell.cell_type == "markdown" and meta.get("solution"):
        role = "written answer"
    elif meta.get("solution"):
        role = "answer cell"
    elif meta.get("grade"):
        role = "test cell"
    else:
        role = "cell"
    name = f" {meta['grade_id']}" if meta.get("grade_id") else ""
    if role == "written answer":
        above = _first_line(_last_paragraph(nb.cells[index - 1].source)) if index > 0 else ""
        hint = f', below "{above}"' if above else ""
    else:
        first = _first_line(cell.source)
        hint = f', starting "{first}"' if first else ""
    return f"{role}{name} (cell {index + 1}{hint})"


def _last_paragraph(source: str) -> str:
    """The question a written answer follows: the last paragraph of the cell above it."""
    paragraphs = [p for p in re.split(r"\n\s*\n", source) if p.strip()]
    return paragraphs[-1] if paragraphs else ""


def _first_line(source: str, width: int = 60) -> str:
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= width else line[:width - 3].rstrip() + "..."


def error_frames(error, numbers: dict[int, int]) -> list[Frame]:
    """The notebook frames of an error output, outermost first: each "Cell In[n], line k"
    whose In[n] ran in this check (`numbers`: In[n] -> cell index)."""
    text = _ANSI.sub("", "\n".join(error.get("traceback", [])))
    return [Frame(numbers[int(n)], int(line)) for n, line in _FRAME.findall(text)
            if int(n) in numbers]


def is_syntax_error(ename: str) -> bool:
    return ename in _SYNTAX


def missing_name(ename: str, evalue: str) -> str | None:
    """The name a NameError says is not defined."""
    found = re.fullmatch(r"name '(\w+)' is not defined", evalue.strip())
    return found.group(1) if ename == "NameError" and found else None


def defines_name(source: str, name: str, after_line: int = 1, whole: bool = False) -> bool:
    """Whether the cell defines `name` at its top level (def, class, assignment, import) on
    line `after_line` or later (`whole`: anywhere, for a cell that did not run at all)."""
    n = re.escape(name)
    pattern = re.compile(rf"^(?:(?:async\s+)?def\s+{n}\b|class\s+{n}\b|{n}\s*(?::[^=]*)?=(?!=)"
                         rf"|(?:from\s+\S+\s+)?import\s.*\b{n}\b)")
    return any(pattern.match(line) for number, line in enumerate(source.splitlines(), 1)
               if whole or number >= after_line)


def answer_stub_line(source: str) -> int | None:
    """The line of the released stub's `raise NotImplementedError()` in an answer cell, or
    None when the student replaced it."""
    lines = [line.strip() for line in source.splitlines()]
    for number in range(1, len(lines)):
        if (lines[number - 1], lines[number]) == CODE_STUB:
            return number + 1
    return None


def written_answer_missing(source: str) -> bool:
    """A written answer left as released (nbgrader's stub) or emptied."""
    return source.strip() in ("", TEXT_STUB)
