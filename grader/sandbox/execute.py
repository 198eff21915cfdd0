"""Our steps in nbgrader's autograde pipeline: repair a tampered notebook, then execute it with
the tests in the grader's process (see judge.py) instead of nbgrader's in-kernel `Execute`."""

from __future__ import annotations

import copy
import functools
import json
import os
import stat
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_solution
from traitlets import Bool, Dict, Unicode

from grader.preprocessors import is_test_cell
from grader.sandbox import answers
from grader.sandbox.judge import Judge
from grader.sandbox.scan import scan
from grader.sandbox.session import Limits, confinement

# Executed notebooks computed elsewhere (a process pool or a Dask worker, see grader.parallel),
# keyed by (assignment, student, notebook): {"notebook": JSON, "flags": [...]}.
PRECOMPUTED: dict[tuple[str, str, str], dict] = {}

# Names a student's files may not take: they would shadow the packages the notebook imports.
PROTECTED = {"grader", "solutions", "torch", "numpy", "IPython", "nbgrader", "math"}


def flags_path(course_root: Path, assignment: str, student: str) -> Path:
    return Path(course_root) / "flags" / assignment / f"{student}.json"


def add_flags(course_root, assignment: str, student: str, notebook: str, flags) -> None:
    """Append flags (dicts with kind and detail) for one student's notebook."""
    path = flags_path(course_root, assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    entries = data.setdefault(notebook, [])
    for flag in flags:
        if flag not in entries:
            entries.append(flag)
    path.write_text(json.dumps(data, indent=1))


def read_flags(course_root, assignment: str, student: str) -> list[dict]:
    path = flags_path(course_root, assignment, student)
    if not path.exists():
        return []
    flags = [f for fs in json.loads(path.read_text()).values() for f in fs]
    return [f for i, f in enumerate(flags) if f not in flags[:i]]


class _CourseStep(NbGraderPreprocessor):
    course_root = Unicode("", help="the course directory (for release files and flags)").tag(
        config=True)

    def _where(self, resources):
        info = resources["nbgrader"]
        return info["assignment"], info["student"], info["notebook"]

    def _released(self, resources):
        assignment, _, notebook = self._where(resources)
        path = Path(self.course_root) / "release" / assignment / f"{notebook}.ipynb"
        return copy.deepcopy(_read_released(str(path), path.stat().st_mtime_ns))

    def _flag(self, resources, kind, detail):
        assignment, student, notebook = self._where(resources)
        add_flags(self.course_root, assignment, student, notebook,
                  [{"kind": kind, "detail": detail}])


@functools.lru_cache(maxsize=16)
def _read_released(path: str, mtime_ns: int):
    """The released notebook (read once per grading run, not once per student)."""
    return nbformat.read(path, as_version=4)


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


class RestoreCells(_CourseStep):
    """Put the instructor's cells back as released: deleted ones re-inserted, metadata reset,
    unknown or duplicated grade ids stripped. (nbgrader's OverwriteCells then restores the
    sources of test and read-only cells, hidden tests included.)"""

    def preprocess(self, nb, resources):
        released = self._released(resources)
        reference = {_grade_id(c): c for c in released.cells if _grade_id(c)}
        seen, cells = set(), []
        for cell in nb.cells:
            gid = _grade_id(cell)
            if gid is None:
                cell.metadata.pop("nbgrader", None)
            elif gid not in reference or gid in seen:
                why = "a second cell with" if gid in seen else "a cell with an unknown"
                if cell.metadata["nbgrader"].get("grade") or gid in seen:
                    self._flag(resources, "metadata",
                               f"{why} grade id {gid!r} was not graded")
                cell.metadata.pop("nbgrader")
            else:
                seen.add(gid)
                ref = reference[gid]
                if cell.metadata["nbgrader"] != ref.metadata["nbgrader"]:
                    self._flag(resources, "metadata",
                               f"the nbgrader metadata of {gid!r} was changed; restored")
                cell.metadata["nbgrader"] = copy.deepcopy(ref.metadata["nbgrader"])
                if cell.cell_type != ref.cell_type:
                    self._flag(resources, "metadata", f"cell {gid!r} changed type; restored")
                    cell = _like(ref, cell.source)
                elif is_test_cell(ref) and not _same_visible(cell, ref):
                    self._flag(resources, "restored", f"test cell {gid!r} was edited; restored")
            cells.append(cell)
        # re-insert deleted instructor cells after the cell that precedes them in the release
        order = [_grade_id(c) for c in released.cells]
        for i, gid in enumerate(order):
            if gid is None or gid in seen:
                continue
            kind = "test cell" if is_test_cell(reference[gid]) else "cell"
            self._flag(resources, "restored", f"{kind} {gid!r} was deleted; restored")
            before = next((g for g in reversed(order[:i]) if g in seen), None)
            at = next((j + 1 for j, c in enumerate(cells) if before and _grade_id(c) == before),
                      0)
            cells.insert(at, copy.deepcopy(reference[gid]))
            seen.add(gid)
        nb.cells = cells
        return nb, resources


def _like(ref, source):
    cell = copy.deepcopy(ref)
    cell.source = source
    return cell


def _same_visible(cell, ref) -> bool:
    """The visible part of a released test cell (before any hidden-test marker) is unchanged."""
    return cell.source.strip() == ref.source.strip()


class JudgedExecute(_CourseStep):
    """Execute the notebook with judge.Judge: student code confined in its own process, the
    verdict of every test cell computed here."""

    landlock = Bool(True, help="confine the student's process with Landlock").tag(config=True)
    unconfined = Bool(False, help="grade even where the sandbox cannot be built (every "
                      "submission is flagged 'unconfined')").tag(config=True)
    limits = Dict({}, help="Limits fields overriding the defaults for every assignment").tag(
        config=True)

    def _limits(self, nb) -> Limits:
        values = dict(self.limits)
        values.update(nb.metadata.get("grader", {}).get("limits", {}))  # per assignment
        return Limits(**{k: v for k, v in values.items() if k in Limits.__dataclass_fields__})

    def preprocess(self, nb, resources):
        assignment, student, notebook = self._where(resources)
        done = PRECOMPUTED.pop((assignment, student, notebook), None)
        if done is not None and _take_outputs(nb, nbformat.from_dict(json.loads(done["notebook"]))):
            return nb, resources
        released = self._released(resources)
        for cell in nb.cells:
            if cell.cell_type == "code" and not is_test_cell(cell):
                for why in scan(cell.source):
                    self._flag(resources, "suspicious", why)
        judge = Judge(self._scratch_files(resources), self._answers(resources),
                      self._limits(released), self.landlock, confinement(self.unconfined))
        judge.run(nb)
        add_flags(self.course_root, assignment, student, notebook,
                  [f.as_dict() for f in judge.flags])
        return nb, resources

    def _answers(self, resources) -> frozenset[str]:
        """The names the instructor's solution cells define (see answers.py)."""
        assignment, _, notebook = self._where(resources)
        path = Path(self.course_root) / "source" / assignment / f"{notebook}.ipynb"
        source = nbformat.read(path, as_version=4)
        return answers.declared([c.source for c in source.cells
                                 if c.cell_type == "code" and is_solution(c)])

    def _scratch_files(self, resources) -> dict[str, bytes]:
        """The student's own files, then the released files over them; never a notebook with
        hidden tests in it, never a link."""
        assignment, student, _ = self._where(resources)
        root = Path(self.course_root)
        submitted = root / "submitted" / student / assignment
        release = root / "release" / assignment
        files: dict[str, bytes] = {}
        for path in _regular_files(submitted):
            name = str(path.relative_to(submitted))
            top = name.split("/")[0]
            if top.removesuffix(".py") in PROTECTED:
                self._flag(resources, "shadowing",
                           f"submitted {top}, which would hide the real {top.removesuffix('.py')}"
                           " package; removed")
                continue
            files[name] = path.read_bytes()
        for path in _regular_files(release):
            if path.suffix == ".ipynb":
                continue
            name = str(path.relative_to(release))
            data = path.read_bytes()
            if name in files and files[name] != data:
                self._flag(resources, "helper", f"{name} differed from the released file; the "
                           "instructor's copy was used")
            files[name] = data
        return files


def _regular_files(folder: Path) -> list[Path]:
    """Regular files under `folder`, links neither followed nor listed."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
    return found


def _take_outputs(nb, executed) -> bool:
    """Copy the outputs of `executed` onto `nb` if it is the same notebook, cell for cell."""
    if len(nb.cells) != len(executed.cells) or any(
            a.cell_type != b.cell_type or a.source != b.source
            for a, b in zip(nb.cells, executed.cells, strict=True)):
        return False
    for a, b in zip(nb.cells, executed.cells, strict=True):
        if a.cell_type == "code":
            a.outputs, a.execution_count = b.outputs, b.execution_count
    return True
