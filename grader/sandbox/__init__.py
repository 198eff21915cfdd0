"""Grading untrusted notebooks: the student's code runs in a confined worker process, every
test's verdict is reached in the grader's own process (see SECURITY.md).

This file makes `grader.sandbox` a regular package, so that a non-editable install (`pip install
.`, as a Dask worker gets) ships it; without it setuptools' find_packages leaves it out.
"""
