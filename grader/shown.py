"""Student-controlled text as the instructor's terminal and logs may show it.

A folder name, a file name inside a submission, a roster name or an error that quotes one is
written by a student. Printed as is, its control characters act on the instructor's terminal
(ESC sequences set the window title, erase lines, move the cursor; CR and LF forge whole lines of
progress; U+202E turns the rest of a line around), and a name that is not valid UTF-8 (a lone
surrogate, as Python decodes such bytes from the file system) stops the print itself with a
UnicodeEncodeError. `shown` makes every such character visible as an escape, the way Python's
repr writes it; every print and log line of the grader that can hold student text goes through
it (`install_log_escaping` for logging).

Escaped: every character that str.isprintable() rejects but the ASCII space: C0 and C1 controls,
DEL, format characters (bidi overrides and isolates, zero-width characters), line and paragraph
separators, other spaces, surrogates, private-use and unassigned code points. A backslash is
left as it is, so a student can write a name that reads like an escape; it is text all the same.
"""

from __future__ import annotations

import logging

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(text: object) -> str:
    """`text` with each unprintable character as a visible escape (\\x1b, \\u202e, \\udcff)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


class ShownLogRecord(logging.LogRecord):
    """A log record whose message is shown safely, whichever handler writes it (nbgrader's and
    traitlets' included): its arguments (where a student's id, file name or error text goes)
    are `shown` whole, line breaks included, so none can forge a line; the message itself keeps
    its lines (a traceback nbgrader logs as its message must stay readable, and
    grader.nbgrader.api.reason reads its last line), each `shown`, the lines after the first
    indented, so that no text in it starts a line of the log as the program's own would."""

    def getMessage(self) -> str:  # noqa: N802 (logging's name)
        msg = str(self.msg)
        if self.args:
            args = self.args
            if isinstance(args, dict):
                args = {k: _shown_arg(v) for k, v in args.items()}
            else:
                args = tuple(_shown_arg(a) for a in args)
            msg = msg % args
        return "\n    ".join(shown(line) for line in msg.split("\n"))


def _shown_arg(value: object) -> object:
    """A %-argument escaped, numbers left as numbers (a %d or %.1f format still takes them)."""
    return value if isinstance(value, int | float) else shown(value)


def install_log_escaping() -> None:
    """Make every log record of this process (and of the processes it forks) a ShownLogRecord.
    Left alone when another record factory was installed (that one is kept)."""
    factory = logging.getLogRecordFactory()
    if factory is logging.LogRecord:
        logging.setLogRecordFactory(ShownLogRecord)
