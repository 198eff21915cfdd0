"""Our steps in nbgrader's autograde pipeline: repair a tampered notebook, then execute it with
the tests in the grader's process (see judge.py) instead of nbgrader's in-kernel `Execute`."""

from __future__ import annotations

import copy
import functools
import json
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Dict, Unicode

from grader.preprocessors import is_test_cell
from grader.sandbox.judge import Judge
from grader.sandbox.scan import scan
from grader.sandbox.session import Limits

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
        scratch = Path(tempfile.mkdtemp(prefix=f"grade-{student}-"))
        try:
            self._fill_scratch(scratch, resources)
            judge = Judge(str(scratch), self._limits(released), self.landlock)
            judge.run(nb, _setup_source(released))
            assignment, student, notebook = self._where(resources)
            add_flags(self.course_root, assignment, student, notebook,
                      [f.as_dict() for f in judge.flags])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return nb, resources

    def _fill_scratch(self, scratch: Path, resources) -> None:
        """The student's own files, then the released files over them; never a notebook with
        hidden tests in it."""
        assignment, student, _ = self._where(resources)
        root = Path(self.course_root)
        submitted = root / "submitted" / student / assignment
        release = root / "release" / assignment
        for src in sorted(submitted.iterdir()) if submitted.is_dir() else []:
            name = src.name
            if name.removesuffix(".py") in PROTECTED:
                self._flag(resources, "shadowing",
                           f"submitted {name}, which would hide the real {name.removesuffix('.py')}"
                           " package; removed")
                continue
            if src.is_symlink():
                self._flag(resources, "suspicious", f"submitted a symbolic link {name}; removed")
                continue
            if src.is_dir():
                shutil.copytree(src, scratch / name, symlinks=False,
                                ignore=shutil.ignore_patterns("*.lnk"))
            else:
                shutil.copy2(src, scratch / name)
        for src in sorted(release.rglob("*")):
            if src.is_dir() or src.suffix == ".ipynb":
                continue
            dest = scratch / src.relative_to(release)
            if dest.exists() and dest.read_bytes() != src.read_bytes():
                self._flag(resources, "helper", f"{dest.relative_to(scratch)} differed from the "
                           "released file; the instructor's copy was used")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)


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


def _setup_source(released) -> str | None:
    """The notebook's first code cell, when it is read-only instructor code (the imports)."""
    for cell in released.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
            return cell.source
        return None
    return None
