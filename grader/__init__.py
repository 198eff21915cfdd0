"""The course's autograder, built on nbgrader.

`python -m grader --help` lists the commands. `grader.checks` holds the helpers that the
notebooks' tests call; they are safe to ship to students (they contain no solutions).
"""

import sys

# nbformat validates notebooks with jsonschema, which compiles an IRI grammar at import when the
# optional package rfc3987_syntax is installed (Jupyter's event schemas pull it in): over a second
# of CPU in every process that reads a notebook, for a string format no notebook schema uses.
# The grader's processes go without it; jsonschema then skips that one format check.
# (Measured by bench/autograde_class.py's start-up breakdown; tests/grader/test_startup.py.)
sys.modules.setdefault("rfc3987_syntax", None)
