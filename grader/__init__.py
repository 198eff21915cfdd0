"""The course's autograder, built on nbgrader.

`python -m grader --help` lists the commands. `grader.checks` holds the helpers that the
notebooks' tests call; they are safe to ship to students (they contain no solutions).
"""

import sys

# nbformat validates notebooks with jsonschema, whose module of string formats imports every
# optional package it can check a format with. Neither nbformat nor nbgrader validates formats
# (they pass no format checker), and no notebook schema names one, so those imports are only
# start-up: rfc3987_syntax compiles an IRI grammar, over a second of CPU in every process that
# reads a notebook (Jupyter's event schemas pull it in), and the others (durations with arrow,
# URIs, dates, colours, host names) 50-60 ms more. The grader's processes go without them;
# jsonschema then leaves those formats unchecked, which no validation here asks it to do.
# (Measured by bench/autograde_class.py's start-up breakdown; tests/grader/test_startup.py.)
for _name in ("rfc3987_syntax", "isoduration", "rfc3986_validator", "rfc3339_validator",
              "webcolors", "uri_template", "fqdn"):
    sys.modules.setdefault(_name, None)
del _name
