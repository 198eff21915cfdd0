"""`python -m grader.cli`, as `python -m grader`."""

from grader.cli import run

run()
