"""Our steps in nbgrader's preprocessor pipelines (configured in grader.nbgrader.config), each
changing what nbgrader does: the sanitizing one (RestoreCells), the recording one
(StderrIsNotFailure) and the feedback's (FeedbackGrades, ShortTracebacks). The execute step,
LoadExecuted, is grader/nbgrader/execute.py; nbgrader's own steps made faster
(OverwriteCellsOnce, SaveAutoGradesOnce, CheckCellMetadata) are grader/nbgrader/patches.py."""

import copy
import functools
import re
from pathlib import Path

import nbformat
from nbgrader import preprocessors as nbgrader_preprocessors
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from grader.cells import is_test_cell
from grader.submission import flag


class StderrIsNotFailure(NbGraderPreprocessor):
    """Turn stderr text into stdout text, so only a raised error fails a test cell.

    nbgrader gives zero to any cell that wrote to stderr (its issue #1904); torch and numpy
    warnings go there, so a correct answer could lose its points. The text is kept, only its
    stream changes.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
        return cell, resources


class ShortTracebacks(NbGraderPreprocessor):
    """In test cells, replace a traceback by its last line: the message meant for the student.

    A full traceback quotes the hidden test code it passed through.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if is_test_cell(cell):
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class FeedbackGrades(nbgrader_preprocessors.GetGrades):
    """nbgrader's GetGrades, and for the feedback page what a student needs to read each graded
    cell: a name (`title`), and its state, in cell.metadata.grader_feedback (set on every
    cell, so no submission can bring its own):

    - "passed", "failed" or "partial": a test, by its score;
    - "ungraded": a written (or hand-graded) answer that has neither a hand-given nor an
      automatic score yet; nbgrader would show it as 0 / N;
    - "graded": an answer with its score.

    A test is named by its first comment line, the way the notebooks describe each test
    ("# 2 points: weights are distributions; ...", without the points), else by its grade_id
    in words; a written answer by the question above it.
    """

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        for index, cell in enumerate(nb.cells):
            state = cell.metadata.pop("grader_feedback_state", None)
            cell.metadata.pop("grader_feedback", None)
            if state is not None:
                above = nb.cells[index - 1].source if index > 0 else ""
                cell.metadata["grader_feedback"] = {"title": feedback_title(cell, above),
                                                    "state": state}
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        cell.metadata.pop("grader_feedback_state", None)  # only ours, from _get_score
        return super().preprocess_cell(cell, resources, cell_index)

    def _get_score(self, cell, resources):
        super()._get_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"],
                                          self.notebook_id, self.assignment_id, self.student_id)
        if grade.manual_score is None and grade.auto_score is None:
            state = "ungraded"
        elif is_test_cell(cell):
            score, points = grade.score or 0, grade.max_score or 0
            state = "passed" if score >= points else ("failed" if score <= 0 else "partial")
        else:
            state = "graded"
        cell.metadata["grader_feedback_state"] = state


_POINTS = re.compile(r"^\d+(?:\.\d+)?\s+points?\b\s*(\((?P<note>[^)]*)\))?\s*:\s*", re.I)


def feedback_title(cell, above: str = "") -> str:
    """A graded cell's name for its student (FeedbackGrades)."""
    meta = cell.metadata.get("nbgrader", {})
    words = re.sub(r"^test_", "", meta.get("grade_id", "")).replace("_", " ").strip()
    if is_test_cell(cell):
        comment = []
        for line in cell.source.splitlines():
            if not line.startswith("#") or line.startswith("###"):
                break
            comment.append(line.lstrip("#").strip())
        text = " ".join(comment).strip()
        found = _POINTS.match(text)
        hidden = bool(found and "hidden" in (found.group("note") or "").lower())
        text = text[found.end():] if found else text
        return f"{'Hidden test' if hidden else 'Test'}: {_shortened(text or words)}"
    if cell.cell_type == "markdown":
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", above) if p.strip()]
        question = paragraphs[-1] if paragraphs else ""
        lead = re.match(r"^\*\*(?P<lead>[^*]+)\*\*\s*(?P<rest>.*)", question, re.S)
        if lead:
            name = re.sub(r"\s*\([^)]*\bpoints?\)", "", lead.group("lead")).rstrip(" .:")
            first = re.split(r"(?<=[.?!])\s", " ".join(lead.group("rest").split()))[0]
            return f"Written answer: {name}" + (f": {_shortened(first)}" if first else "")
        return f"Written answer: {words}"
    return f"{'Task' if meta.get('task') else 'Answer'}: {words}"


def _shortened(text: str, width: int = 90) -> str:
    """One line of at most `width` characters; never cut inside $math$ or `code`."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    text = text[:width - 1]
    for mark in ("$", "`"):
        if text.count(mark) % 2:
            text = text[:text.rindex(mark)]
    return text.rstrip() + "…"


FLAGS = "grader_flags"  # where our steps put their flags in nbgrader's `resources`


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
        resources.setdefault(FLAGS, []).append(flag(kind, detail))


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
