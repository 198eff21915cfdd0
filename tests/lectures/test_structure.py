"""Every lecture has the shape of one sitting, and the course's cross-references hold.

Each lecture's title carries its number, it opens with what the learner will be able to do, it
asks 3 to 5 Try-it questions, and it stays short enough for one sitting. A reference to a section
("section 6.3", "(3.7)", "in 8.5") names a section heading that exists, and "lecture N" a lecture
that exists: lectures were split and renumbered once, and a stale number sends a reader to the
wrong place. The site lists the lectures in the order of their numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))
OBJECTIVES = "**After this lecture you can**"
EXERCISE = re.compile(r"^\s*\*\*Try it\.\*\*")
MAX_CELLS = 72  # the longest lecture today (03) has 71; the two of 82 and 73 cells were split
HEADING = re.compile(r"^#{2,3} (\d)\.(\d+) ", re.MULTILINE)
N = r"([1-9])\.(1[0-9]|[1-9])\b(?!\.\d)"  # lecture.section: 4.6, 5.10; not 0.9, 1.73 or 2.0
SECTION_REFERENCE = re.compile(rf"\bsections? {N}|\({N}\)|\b(?:in|of) {N}|\bto {N}")
LECTURE_REFERENCE = re.compile(r"\b[Ll]ectures? (\d)\b")


def prose(nb) -> list[str]:
    """Markdown cells and the comments of code cells: where the course's words are."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            texts.append(cell.source)
        else:
            texts.extend(line[line.index("#"):] for line in cell.source.splitlines()
                         if "#" in line)
    return texts


def number(path: Path) -> int:
    return int(path.stem[:2])


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_a_lecture_has_the_shape_of_one_sitting(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0].source
    assert first.startswith(f"# {number(path)}. "), f"{path.name}: title {first[:40]!r}"
    assert OBJECTIVES in first, f"{path.name} does not open with its learning objectives"
    objectives = first[first.index(OBJECTIVES):].splitlines()
    assert sum(line.startswith("- ") for line in objectives) >= 3, path.name
    exercises = sum(bool(EXERCISE.match(c.source)) for c in nb.cells if c.cell_type == "markdown")
    assert 3 <= exercises <= 5, f"{path.name}: {exercises} Try-it exercises"
    assert len(nb.cells) <= MAX_CELLS, f"{path.name}: {len(nb.cells)} cells, more than one sitting"


def test_lectures_are_numbered_one_to_n():
    assert [number(p) for p in LECTURES] == list(range(1, len(LECTURES) + 1))


def test_cross_references_name_sections_and_lectures_that_exist():
    headings = set()
    for path in LECTURES:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                headings |= {(int(a), int(b)) for a, b in HEADING.findall(cell.source)}
    for path in LECTURES:  # every section is numbered by its own lecture
        nb = nbformat.read(path, as_version=4)
        own = {a for c in nb.cells if c.cell_type == "markdown"
               for a, _ in HEADING.findall(c.source)}
        assert own <= {str(number(path))}, f"{path.name} has sections numbered {sorted(own)}"
    broken = []
    for path in [*LECTURES, *(REPO / "assignments").glob("*/*.ipynb")]:
        nb = nbformat.read(path, as_version=4)
        for text in prose(nb):
            for found in SECTION_REFERENCE.finditer(text):
                parts = [int(g) for g in found.groups() if g is not None]
                for lecture, section in zip(parts[::2], parts[1::2], strict=False):
                    if (lecture, section) not in headings:
                        broken.append(f"{path.name}: {found.group(0)!r}")
            for found in LECTURE_REFERENCE.finditer(text):
                if not 1 <= int(found.group(1)) <= len(LECTURES):
                    broken.append(f"{path.name}: {found.group(0)!r}")
    assert not broken, "references to nothing:\n" + "\n".join(broken)


def test_the_site_lists_the_lectures_in_order():
    toc = (REPO / "book" / "_toc.yml").read_text()
    listed = re.findall(r"file: (lectures/\S+)", toc)
    assert listed == [f"lectures/{p.stem}" for p in LECTURES]
