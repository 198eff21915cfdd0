"""nbgrader's configuration as data (grader/nbgrader/config.py): each pipeline is nbgrader's own
list with our steps in their places, each step once. (A step listed twice, RestoreCells after
OverwriteCells, once flagged every honest student's hidden tests as edited; the adversarial
suite caught it, this test names it.)"""

from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    ClearOutput,
    DeduplicateIds,
    IgnorePattern,
    LimitOutput,
    OverwriteKernelspec,
)

from grader.course import Course
from grader.nbgrader.config import nbgrader_config
from grader.nbgrader.execute import LoadExecuted
from grader.nbgrader.patches import CheckCellMetadata, OverwriteCellsOnce, SaveAutoGradesOnce
from grader.nbgrader.preprocessors import RestoreCells, StderrIsNotFailure
from grader.submission import Limits


def test_the_sanitizing_steps_are_nbgraders_with_ours_each_once_in_order(tmp_path):
    c = nbgrader_config(Course(Path(tmp_path)))
    assert c.Autograde.sanitize_preprocessors == [
        ClearOutput, RestoreCells, DeduplicateIds, OverwriteKernelspec, OverwriteCellsOnce,
        CheckCellMetadata]


def test_the_recording_steps_are_nbgraders_with_ours_each_once_in_order(tmp_path):
    c = nbgrader_config(Course(Path(tmp_path)))
    steps = c.Autograde.autograde_preprocessors
    assert steps == [LoadExecuted, IgnorePattern, StderrIsNotFailure, ClearMetadataPreprocessor,
                     LimitOutput, SaveAutoGradesOnce, AssignLatePenalties, CheckCellMetadata]


def test_the_run_limits_reach_the_execute_step_as_data(tmp_path):
    limits = Limits(cell_timeout=7.0, memory_bytes=2**30)
    c = nbgrader_config(Course(Path(tmp_path)), limits)
    assert Limits(**c.LoadExecuted.limits) == limits
    assert c.Execute.timeout == 7.0
    assert Limits(**nbgrader_config(Course(Path(tmp_path))).LoadExecuted.limits) == Limits()
