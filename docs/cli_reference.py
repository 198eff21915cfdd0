"""Writes docs/cli.md, the reference of `python -m grader`, from the CLI's own parser, so the
page never drifts from the code (`make cli-reference`; tests/test_docs.py fails when it has).

Run from the repository root: `python docs/cli_reference.py [OUT]` (default docs/cli.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "cli.md"
WIDTH = "100"  # argparse wraps to $COLUMNS: fixed, so the page is the same on every terminal

HEADER = """# `python -m grader`: command reference

Generated from the CLI's parser by `make cli-reference` (docs/cli_reference.py); do not edit by
hand. How the commands fit together over a term: [hub.md](hub.md#the-flow-of-a-term) and
[instructors.md](instructors.md).
"""


def reference() -> str:
    os.environ["COLUMNS"] = WIDTH
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from grader.cli import parser

    top = parser()
    top.prog = "python -m grader"
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in commands._choices_actions}
    parts = [HEADER, "```text", top.format_help().rstrip(), "```", ""]
    for name, sub in commands.choices.items():
        sub.prog = f"python -m grader {name}"
        parts += [f"## `{name}`", "", f"{helps.get(name) or ''}".strip(), "", "```text",
                  sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:] or [str(OUT)])[0])
    out.write_text(reference())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
