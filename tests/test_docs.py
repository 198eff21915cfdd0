"""The docs never name a command that does not exist: every `make TARGET`, every
`python -m grader COMMAND` and each of its `--options` shown in README.md, SECURITY.md or
docs/*.md is checked against the Makefile and the CLI's own parser; every relative link and
image points at a file of the repository."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from grader.cli import parser

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", REPO / "SECURITY.md", REPO / "CHANGELOG.md",
         *sorted((REPO / "docs").glob("*.md"))]


def _commands(text: str) -> list[str]:
    """Shell lines of shell code blocks and inline code spans, comments dropped, continuations
    joined. Blocks of another language (text, python, output) are not commands."""
    found, prose, block, language = [], [], None, None
    for line in text.splitlines():
        if line.startswith("```"):
            if block is None:
                block, language = [], line[3:].strip()
            else:
                if language in ("", "bash", "sh", "console", "shell"):
                    found += _shell_lines("\n".join(block))
                block = None
            continue
        (prose if block is None else block).append(line)
    found += re.findall(r"`([^`\n]+)`", "\n".join(prose))
    return found


def _shell_lines(block: str) -> list[str]:
    lines = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _make_targets() -> set[str]:
    makefile = (REPO / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", makefile, flags=re.M))


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _grader_invocations(line: str) -> list[list[str]]:
    """The words after `-m grader` in each invocation on the line."""
    calls = []
    for part in re.split(r"&&|;|\|", line):
        try:
            words = shlex.split(part.replace("[", " ").replace("]", " "))
        except ValueError:
            continue
        for i in range(len(words) - 1):
            if words[i] == "-m" and words[i + 1] == "grader":
                calls.append(words[i + 2:])
    return calls


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_make_target_shown_exists(page):
    targets = _make_targets()
    shown = {m for line in _commands(page.read_text())
             for m in re.findall(r"(?:^|\s|sudo\s)make ([a-z][\w-]*)", line)}
    missing = sorted(shown - targets)
    assert not missing, f"{page.name} shows make target(s) the Makefile lacks: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_grader_command_and_option_shown_exists(page):
    commands = _subparsers()
    global_options = {s for a in parser()._actions for s in a.option_strings}
    problems = []
    for line in _commands(page.read_text()):
        for words in _grader_invocations(line):
            words = [w for w in words if w not in ("...",)]
            # global options (before the command) and their values
            while words and words[0].startswith("-"):
                option = words.pop(0).split("=")[0]
                if option not in global_options:
                    problems.append(f"{line!r}: no global option {option}")
                elif words and not words[0].startswith("-") and option not in ("-h", "--help"):
                    words.pop(0)
            if not words or words[0] in ("COMMAND",):
                continue
            name = words[0]
            if name not in commands:
                problems.append(f"{line!r}: no command {name!r}")
                continue
            options = {s for a in commands[name]._actions for s in a.option_strings}
            for word in words[1:]:
                if word.startswith("--") and word.split("=")[0] not in options | global_options:
                    problems.append(f"{line!r}: {name} has no option {word}")
    assert not problems, f"{page.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = page.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) + re.findall(r'src="([^"]+)"', text)
    missing = [t for t in targets if "://" not in t and not t.startswith("mailto:")
               and not (page.parent / t).exists()]
    assert not missing, f"{page.name} links to missing file(s): {missing}"


# The repository's own folders: a code span that starts with one of them names a path in it.
TOP_FOLDERS = ("grader/", "tests/", "lectures/", "assignments/", "solutions/", "bench/", "docs/",
               "book/", "requirements/", ".ci/")
# A placeholder the reader fills in (NAME, STUDENT, ASSIGNMENT): a word all in capitals that is
# not one of the repository's own capitalized file names.
PLACEHOLDER = re.compile(r"\b(?!(?:README|CHANGELOG|SECURITY|LICENSE)\b)[A-Z][A-Z_]+\b")


def _named_paths(text: str) -> list[tuple[int, str, str]]:
    """(line, the code span, the path it names) for each inline code span outside code blocks
    that names one path of the repository: no spaces, wildcards, placeholders, {} or <>. A test
    id's `::name`, a `:LINE` and a trailing / are not part of the path."""
    found, in_block = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            continue
        for span in re.findall(r"`([^`\n]+)`", line):
            if (not span.startswith(TOP_FOLDERS) or re.search(r"[\s*{}<>]", span)
                    or PLACEHOLDER.search(span)):
                continue
            path = re.sub(r"(::.*|:\d+(-\d+)?)$", "", span).rstrip("/")
            found.append((number, span, path))
    return found


def test_every_repository_path_named_exists():
    """Every path of the repository that README.md, SECURITY.md, CHANGELOG.md or docs/*.md names
    in a code span is there (a file or a folder): a moved or deleted one must be updated."""
    made_up = _named_paths("see `tests/grader/test_made_up.py::test_x` and `grader/cli/`, not "
                           "`grader/*.py`, `solutions/NAME` or `tests/x.py -k y`")
    assert [p for _, _, p in made_up] == ["tests/grader/test_made_up.py", "grader/cli"]
    assert not (REPO / made_up[0][2]).exists(), "the check would let a made-up path through"
    gone = [f"{page.relative_to(REPO)}:{number}: {path}" + (f" (`{span}`)" if span != path else "")
            for page in PAGES
            for number, span, path in _named_paths(page.read_text())
            if not (REPO / path).exists()]
    assert not gone, "the docs name paths the repository does not have:\n" + "\n".join(gone)


def test_the_cli_reference_is_generated_from_the_parser():
    """docs/cli.md is exactly what the parser prints today (`make cli-reference` rewrites it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  REPO / "docs" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (REPO / "docs" / "cli.md").read_text() == module.reference(), (
        "docs/cli.md is out of date with grader/cli/: run `make cli-reference`")


def test_readme_is_a_front_door():
    """About 150-200 lines: what it is, set-up, paths, assignments, requirements, layout."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 220
    for heading in ("## Set-up: two commands", "## Choose your path", "## The assignments",
                    "## Requirements", "## Layout"):
        assert heading in readme
    for page in ("docs/students.md", "docs/instructors.md", "docs/hub.md",
                 "docs/self-learners.md", "docs/contributing.md"):
        assert f"]({page})" in readme, f"README does not link {page}"


def test_the_architecture_page_names_every_module_and_nothing_gone():
    """docs/architecture.md is the map of grader/: every module is on it (a new one must be
    placed), and every path it names is in the repository (a moved one must be updated)."""
    page = (REPO / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:grader|solutions|lectures|assignments)/[\w/.-]*)`", page))
    gone = sorted(p for p in named if "NAME" not in p and not (REPO / p.rstrip("/")).exists())
    assert not gone, f"docs/architecture.md names paths that do not exist: {gone}"
    modules = sorted(str(p.relative_to(REPO)) for p in (REPO / "grader").rglob("*.py")
                     if p.name not in ("__init__.py", "__main__.py")
                     and "__pycache__" not in p.parts)
    # grader/checks/ and grader/hub/ are each described in one paragraph, by file name
    bare = set(re.findall(r"`(\w+\.py)`", page))
    in_folder = {m for m in modules if Path(m).parent.name in ("checks", "hub")
                 and Path(m).name in bare}
    missing = [m for m in modules if m not in page and m not in in_folder]
    assert not missing, f"modules of grader/ that docs/architecture.md does not place: {missing}"


# A diary's marks: a "round" of work (also in "around", "background": say "about", "behind") or a
# commit id. Hex runs are matched as whole words: "feedback" holds the hex run "feedbac", and the
# name of a command is no diary.
DIARY = re.compile(r"round|\b[0-9a-f]{7,}\b", re.IGNORECASE)


def test_the_docs_are_no_diary():
    """The docs describe the system as it is: no rounds of work, no commit ids. History is in git
    and CHANGELOG.md says what users notice, without either."""
    for diary_line in ("Round 12", "the twelfth round", "at 3dc37d1", "fixed in 3DC37D1 today",
                   "commit 46f5b2a0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6"):
        assert DIARY.search(diary_line), f"the check would let {diary_line!r} through"
    assert not DIARY.search("python -m grader feedback NAME --publish")
    found = [f"{page.relative_to(REPO)}:{number}: {line}"
             for page in PAGES
             for number, line in enumerate(page.read_text().splitlines(), start=1)
             if DIARY.search(line)]
    assert not found, "diary words or commit ids in the docs:\n" + "\n".join(found)
