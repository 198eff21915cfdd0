"""An assignment's own settings, as its source notebooks declare them in their metadata under
`grader`: `limits` (fields of grader.submission.Limits), `judge_preload` and
`sandbox_preload` (modules its tests and its students' code import on first use). The one
reader of that metadata; anything malformed declares nothing."""

from __future__ import annotations

import json
from pathlib import Path


def settings(metadata) -> dict:
    """The `grader` entry of a notebook's metadata, or {} when there is none or it is no map."""
    found = metadata.get("grader") if isinstance(metadata, dict) else None
    return found if isinstance(found, dict) else {}


def limits_in(metadata) -> dict:
    """The limits a notebook's metadata sets (`grader.limits`), or {}."""
    limits = settings(metadata).get("limits")
    return dict(limits) if isinstance(limits, dict) else {}


def declared(source: Path | None, key: str) -> list[str]:
    """The module names that the notebooks in `source` list in their metadata `grader.<key>`
    (a notebook that cannot be read, or lists something else, declares nothing)."""
    names: list[str] = []
    for path in sorted(Path(source).glob("*.ipynb")) if source else []:
        try:
            metadata = json.loads(path.read_text())["metadata"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        names += [m for m in modules_in(metadata, key) if m not in names]
    return names


def modules_in(metadata, key: str) -> list[str]:
    """The module names a notebook's metadata lists under `grader.<key>` (anything that is not
    a dotted name is left out)."""
    wanted = settings(metadata).get(key)
    if not isinstance(wanted, list):
        return []
    return [m for m in wanted if isinstance(m, str) and m
            and all(part.isidentifier() for part in m.split("."))]
