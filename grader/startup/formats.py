"""jsonschema's optional format packages, kept out of the grader's own processes.

nbformat validates notebooks with jsonschema, whose module of string formats imports every
optional package it can check a format with. Neither nbformat nor nbgrader validates formats
(they pass no format checker), and no notebook schema names one, so those imports are only
start-up: rfc3987_syntax compiles an IRI grammar in every process that reads a notebook
(Jupyter's event schemas pull it in), and the others (durations with arrow, URIs, dates,
colours, host names) add to it. The grader's commands (grader.cli) and its grading pool's fork
server (grader.startup.warming) go without them; jsonschema then leaves those formats
unchecked, which no validation here asks it to do. Nothing else is touched: a student's kernel
or a Jupyter server that imports `grader` keeps every package. The gain is in
docs/performance.md; tests/grader/startup/test_startup.py guards it.
"""

import sys

PACKAGES = ("rfc3987_syntax", "isoduration", "rfc3986_validator", "rfc3339_validator",
            "webcolors", "uri_template", "fqdn")


def leave_out() -> None:
    """Make each package unimportable in this process (an import of one raises ImportError,
    which jsonschema catches), unless it is imported already."""
    for name in PACKAGES:
        sys.modules.setdefault(name, None)
