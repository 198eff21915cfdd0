"""Package selection for the two editions of the course.

The instructor edition (the default) ships `grader` and `solutions`. The student edition
(`COURSE_EDITION=student`) ships `grader` only: a student who could import `solutions` could
pass every hidden test by calling the reference. Everything else is in pyproject.toml.
"""

import os

from setuptools import find_packages, setup

EDITIONS = {
    "instructor": ["grader", "grader.*", "solutions", "solutions.*"],
    "student": ["grader", "grader.*"],
}

edition = os.environ.get("COURSE_EDITION", "instructor")
if edition not in EDITIONS:
    raise SystemExit(f"COURSE_EDITION must be one of {sorted(EDITIONS)}, not {edition!r}")

setup(packages=find_packages(include=EDITIONS[edition]))
