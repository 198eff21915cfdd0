"""The grader's code stays readable in pieces: no function (or method) of grader/ is longer than
80 lines, counted from its `def` (decorators left out) to its last line, docstring and comments
included. One that grows past it is split by step, each step a function named for what it does;
the failure names every function over the limit, with its length."""

import ast
from pathlib import Path

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
LIMIT = 80


def long_functions(root: Path, limit: int = LIMIT) -> list[str]:
    """'path:line name (N lines)' of every function under `root` longer than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                                 f"({lines} lines)")
    return found


def test_no_function_of_the_grader_is_over_80_lines():
    too_long = long_functions(REPO / "grader")
    assert not too_long, f"functions of grader/ over {LIMIT} lines (split them by step):\n" \
        + "\n".join(too_long)


def test_the_check_names_a_long_function(tmp_path):
    package = tmp_path / "grader"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (package / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert long_functions(package) == [f"grader/long.py:5 long ({LIMIT + 1} lines)"]
