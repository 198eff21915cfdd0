"""Plumbing shared by the suites, one module a piece; no tests here.

- cli.py: `python -m grader ...` in a process of its own, as an instructor types it; what it
  printed, and what in it would act on a terminal.
- classes.py: a class of a test's own: a course with an assignment released, its students'
  submissions, graded through the CLI (`released_class`, the `own_class` fixture factory); a
  gradebook filled through nbgrader's API.
- pages.py: the grader's pages (feedback, the class report) read, or opened in chromium (the
  `browser`, `page` and `open_page` fixtures); the hub's pages in a user's browser.
- notebooks.py: small nbgrader notebooks, cells found by their nbgrader ids.
- verdicts.py: what `grader check` and autograde each say of a class, and where they disagree.
- processes.py: commands, or fresh interpreters, started at once.
- venvs.py: a throwaway venv borrowing .venv's third-party packages.
- servers.py: free ports, a server waited for, processes stopped.
- lms.py: the files an LMS gives an instructor (a Canvas gradebook export).
- scripts.py: the repository's scripts (bench/*.py) loaded as modules.
"""
