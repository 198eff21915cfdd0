"""Where bubblewrap cannot run, every command that grades says so and names the option that
grades without the sandbox: the option it names is one that command's own parser takes."""

from __future__ import annotations

import re

import pytest

from grader.cli import main, parser
from grader.sandbox import confinement as confinement_module
from grader.sandbox import namespaces
from grader.sandbox.confinement import TAKEN_BY, UNCONFINED

WHY = "bubblewrap (bwrap) is not installed; install Debian's package `bubblewrap`"


@pytest.fixture
def no_sandbox(monkeypatch):
    """This machine as one without bubblewrap: the probe says why, nothing is found yet."""
    monkeypatch.setattr(namespaces, "probe", lambda: WHY)
    monkeypatch.setattr(confinement_module, "_found", {})
    monkeypatch.delenv("GRADER_COURSE", raising=False)


def advice(err: str) -> list[str]:
    """The options the error names, e.g. ['--unconfined']."""
    [line] = [line for line in err.splitlines() if line.startswith("error: ")]
    assert "cannot isolate students' code here: " + WHY in line, line
    return re.findall(r"(?<![\w-])--[a-z][a-z-]*", line)


def parsed(command: str, option: str):
    """`option` given to `command` with the real parser (its other arguments made up)."""
    before = {"autograde": ["soft_select"]}.get(command, [])
    return parser().parse_args([command, *before, option])


def test_the_demo_says_what_to_give_it(no_sandbox, tmp_path, capsys):
    assert main(["demo", "--course", str(tmp_path / "course")]) == 2
    options = advice(capsys.readouterr().err)
    assert options == [UNCONFINED]
    assert parsed("demo", UNCONFINED).unconfined is True
    assert not (tmp_path / "course").exists(), "the demo began its work without a sandbox"


def test_autograde_says_what_to_give_it(no_sandbox, tmp_path, capsys):
    (tmp_path / "subs" / "ann" / "soft_select").mkdir(parents=True)
    (tmp_path / "subs" / "ann" / "soft_select" / "soft_select.ipynb").write_text("{}")
    assert main(["autograde", "soft_select", "--submissions", str(tmp_path / "subs"),
                 "--course", str(tmp_path / "course")]) == 2
    options = advice(capsys.readouterr().err)
    assert options == [UNCONFINED]
    assert parsed("autograde", UNCONFINED).unconfined is True


@pytest.mark.parametrize("command", TAKEN_BY)
def test_each_command_the_advice_names_takes_the_option(command):
    assert parsed(command, UNCONFINED).unconfined is True


def test_the_commands_that_take_the_option_are_the_ones_the_advice_names():
    p = parser()
    commands = next(a for a in p._actions if a.dest == "command").choices
    taking = {name for name, sub in commands.items()
              if any(UNCONFINED in a.option_strings for a in sub._actions)}
    assert taking == set(TAKEN_BY)
