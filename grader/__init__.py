"""The course's autograder, built on nbgrader.

`python -m grader --help` lists the commands; docs/architecture.md shows where each stage of
grading lives. `grader.checks` holds the helpers that the notebooks' tests call; they are safe
to ship to students (they contain no solutions). Importing this package runs nothing.
"""
