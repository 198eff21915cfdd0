"""Tests of the grader (grader/): one folder per package of it, mirroring grader/; the tests of
its top-level modules (and of the whole: layers, structure, install) here.

This is tests.grader. Where tests/ itself stands first on sys.path (a script run from it, such
as `python tests/cuda_checks.py`, or Python started in tests/), `import grader` would find this
folder first: it then loads the repository's grader in its place."""

if __name__ == "grader":
    import importlib.util
    import sys
    from pathlib import Path

    _spec = importlib.util.spec_from_file_location(
        "grader", Path(__file__).resolve().parents[2] / "grader" / "__init__.py")
    sys.modules["grader"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["grader"])
