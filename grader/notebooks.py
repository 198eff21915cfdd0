"""Reading notebooks that may be broken, with errors that name the file and the problem; and a
notebook's JSON for the grader's hand-over between its own stages."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat


def read_notebook(path: Path):
    """Read a notebook, or raise ValueError naming the file and what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such notebook")
    try:
        nb = nbformat.read(path, as_version=4)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid notebook JSON (line {e.lineno}: {e.msg}); "
                         "was it edited outside Jupyter?") from e
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text: {e}") from e
    except Exception as e:  # nbformat validation and version errors
        raise ValueError(f"{path} is not a readable notebook: {e}") from e
    where = _not_unicode(nb)
    if where:
        raise ValueError(f"{path}: {where} holds text that is not valid Unicode (a lone "
                         "surrogate such as \\ud800, written as an escape in the JSON); the "
                         "notebook cannot be graded")
    return nb


def _not_unicode(nb) -> str | None:
    """Where the notebook holds a lone surrogate ("cell 3", "the notebook's metadata"), or
    None. JSON's \\uXXXX escapes can write one; Python reads it into a str that no encoder
    takes, so every later step (the hand-over, writing the executed notebook) would fail as if
    the grader had broken: found here, it is the submission's error."""
    if _encodes(nb):
        return None
    parts = [(f"cell {i}", cell) for i, cell in enumerate(nb.get("cells", []), start=1)]
    for where, part in [*parts, ("the notebook's metadata", nb.get("metadata", {}))]:
        if not _encodes(part):
            return where
    return "the notebook"


def _encodes(part) -> bool:
    try:
        json.dumps(part, ensure_ascii=False).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def unreadable_notebooks(folder: Path, expected: list[str]) -> str | None:
    """Why the notebooks in a student's folder cannot be graded, or None if they can."""
    found = sorted(folder.glob("*.ipynb"))
    if not found:
        return (f"no notebook in {folder} (expected "
                f"{', '.join(name + '.ipynb' for name in expected)})")
    for path in found:
        try:
            read_notebook(path)
        except ValueError as e:
            return str(e)
    return None


def handover(nb) -> str:
    """A notebook as JSON for the grader's hand-over between its stages (stage 1 to the pool,
    the pool back to stage 3), never a file a person reads: compact, by Python's C encoder.
    nbformat.writes copies, validates and indents it with the pure-Python encoder, several
    times the CPU (bench/handover.py measures both). nbformat.reads takes it as any notebook
    (and validates it there)."""
    return json.dumps(nb, ensure_ascii=False)
