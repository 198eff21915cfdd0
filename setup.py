"""Package selection for the two editions of the course.

The instructor edition (the default) ships `grader` and `solutions`. The student edition
(`COURSE_EDITION=student`) ships `grader` without `grader.demo`: a student who could import
`solutions` could pass every hidden test by calling the reference, and `grader.demo` builds its
sample class from the answer key (the by-hand answers, lines of the reference solutions).
tests/grader/test_install.py checks the wheel for both. Everything else is in pyproject.toml.
"""

import os

from setuptools import find_packages, setup

# (packages included, packages excluded) for find_packages
EDITIONS = {
    "instructor": (["grader", "grader.*", "solutions", "solutions.*"], []),
    "student": (["grader", "grader.*"], ["grader.demo", "grader.demo.*"]),
}

edition = os.environ.get("COURSE_EDITION", "instructor")
if edition not in EDITIONS:
    raise SystemExit(f"COURSE_EDITION must be one of {sorted(EDITIONS)}, not {edition!r}")

include, exclude = EDITIONS[edition]
setup(packages=find_packages(include=include, exclude=exclude))
