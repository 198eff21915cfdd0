"""Our steps in nbgrader's preprocessor pipelines (configured in grader.course)."""

from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_locked, is_solution


def is_test_cell(cell) -> bool:
    """A code cell nbgrader grades that is not an answer: a test (visible or hidden)."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def is_instructor_cell(cell) -> bool:
    """A read-only code cell of the instructor's that is neither a test nor an answer."""
    return (cell.cell_type == "code" and is_locked(cell) and not is_grade(cell)
            and not is_solution(cell))


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
