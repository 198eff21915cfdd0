"""grader.shown: student text made safe for the instructor's terminal and logs."""

import logging

import pytest

from grader.shown import ShownLogRecord, install_log_escaping, shown

HOSTILE = ("\x1b]0;pwned\x07", "\x1b[2K\r", "line\nforged", "tab\there", "\x7f", "\x9b31m",
           "\u202egnp.exe", "\u2066iso\u2069", "zero\u200bwidth", "\u2028", "\udcff", "\x00",
           "\U000e0041")


@pytest.mark.parametrize("text", HOSTILE)
def test_every_control_character_is_a_visible_escape(text):
    out = shown(f"alice {text} bob")
    assert out.isprintable(), repr(out)
    assert out.startswith("alice ") and out.endswith(" bob")
    out.encode("utf-8")  # a lone surrogate would raise here (and in print)


def test_printable_text_is_unchanged_and_escaping_is_idempotent():
    for text in ("alice", "Zoë Ünal, 15 / 15", "path/to/soft_select.ipynb", "日本語"):
        assert shown(text) == text
    once = shown("a\x1b[31mb\nc\u202e")
    assert once == "a\\x1b[31mb\\nc\\u202e"
    assert shown(once) == once


def test_log_records_are_escaped_whoever_handles_them():
    record = ShownLogRecord("x", logging.WARNING, __file__, 1, "%s: left out %s",
                            ("al\x1bice", "f\nforged line"), None)
    assert record.getMessage() == "al\\x1bice: left out f\\nforged line"


def test_a_logged_traceback_keeps_its_lines_and_what_fails_is_still_found():
    """nbgrader logs a traceback as its message: its lines stay lines (indented after the
    first, so no text in it starts a log line), controls escaped, and the error row's reason
    is still the exception it ended with."""
    from grader.nbgrader.api import reason

    trace = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
             "grader.nbgrader.execute.ExecutedMismatchError: the copy does not match\x1b[2K")
    record = ShownLogRecord("x", logging.ERROR, __file__, 1, trace, None, None)
    lines = record.getMessage().split("\n")
    assert len(lines) == 3 and all(line.startswith("    ") for line in lines[1:])
    assert lines[-1].endswith("does not match\\x1b[2K")
    assert reason({"log": record.getMessage()}).startswith(
        "grader.nbgrader.execute.ExecutedMismatchError: the copy does not match")
    assert ShownLogRecord("x", logging.INFO, __file__, 1, "%d of %.1f", (3, 2.5),
                          None).getMessage() == "3 of 2.5"


def test_install_keeps_a_factory_someone_else_installed(monkeypatch):
    def other(*a, **k):
        return logging.LogRecord(*a, **k)

    monkeypatch.setattr(logging, "_logRecordFactory", other)
    install_log_escaping()
    assert logging.getLogRecordFactory() is other
    monkeypatch.setattr(logging, "_logRecordFactory", logging.LogRecord)
    install_log_escaping()
    assert logging.getLogRecordFactory() is ShownLogRecord
