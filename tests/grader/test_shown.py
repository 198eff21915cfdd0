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


def test_install_keeps_a_factory_someone_else_installed(monkeypatch):
    def other(*a, **k):
        return logging.LogRecord(*a, **k)

    monkeypatch.setattr(logging, "_logRecordFactory", other)
    install_log_escaping()
    assert logging.getLogRecordFactory() is other
    monkeypatch.setattr(logging, "_logRecordFactory", logging.LogRecord)
    install_log_escaping()
    assert logging.getLogRecordFactory() is ShownLogRecord
