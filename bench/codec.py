"""Benchmark: the values that cross between the grader and a student's process, two formats.

Grades the sample class of one assignment (stages 1 and 2, in this process) and keeps what each
call of a student's function sent (its arguments) and brought back (its value). Then, in this
process, times each value's whole trip, encode + dumps on one side, loads + decode on the other
(grader/sandbox/codec.py), in two formats: MessagePack (the codec) against the same messages as
JSON text with the tensors' raw bytes after it, found through {"B": [offset, length]} entries
(the codec before, its dumps and loads kept here as the baseline). Each figure is the least of
`--repeats` passes over every value (the median in brackets).

    .venv/bin/python bench/codec.py [ASSIGNMENT] [--repeats R]
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from in_process import arguments, cpu_of, grade_sample_class

from grader.nbgrader.config import setup_process
from grader.sandbox import codec


def crossed(assignment: str, work: Path) -> list:
    """(arguments, value) of every call of a student's function grading the sample class."""
    from grader.judge.remote import Link

    calls, call = [], Link.call

    def kept(self, fn, args, kwargs, changed=None):
        value = call(self, fn, args, kwargs, changed)
        calls.append((list(args), value))
        return value

    Link.call = kept
    try:
        for _ in grade_sample_class(assignment, work):
            pass
    finally:
        Link.call = call
    return [(args, value) for args, value in calls if _data_only(args) and _data_only(value)]


def _data_only(value) -> bool:
    """Whether the codec sends `value` whole (no reference to an object of either process)."""
    try:
        codec.encode(value, _no_reference)
        return True
    except LookupError:
        return False


def _no_reference(obj):
    raise LookupError


_RAW = b"\0"  # between the JSON text and the raw bytes


def _json_dumps(message: dict) -> bytes:
    """The codec's dumps before: JSON text, a NUL byte, then the raw bytes its tree holds (each
    `bytes` value becomes {"B": [offset, length]} into them)."""
    raw, size = [], 0

    def place(value):
        nonlocal size
        if type(value) is not bytes:
            raise TypeError(f"{type(value).__name__} is not data")
        raw.append(value)
        size += len(value)
        return {"B": [size - len(value), len(value)]}

    data = json.dumps(message, allow_nan=False, default=place).encode("utf-8")
    return b"".join([data, _RAW, *raw]) if raw else data


def _json_loads(data: bytes) -> dict:
    """The codec's loads before: the JSON tree, with the raw bytes put back where it says."""
    end = data.find(_RAW)
    text, raw = (data, b"") if end < 0 else (data[:end], memoryview(data)[end + 1:])
    size = len(raw)

    def bytes_at(obj: dict):
        if len(obj) != 1 or type(span := obj.get("B")) is not list:
            return obj
        start, length = span if len(span) == 2 else (None, None)
        if type(start) is not int or type(length) is not int or start < 0 or length < 0 \
                or start + length > size:
            raise codec.CodecError("raw bytes outside the message")
        return bytes(raw[start:start + length])

    return json.loads(text.decode("utf-8"), object_hook=bytes_at if end >= 0 else None)


@contextlib.contextmanager
def json_text():
    """The codec as it was: a JSON message, the tensors' bytes after its text."""
    saved = codec.dumps, codec.loads
    codec.dumps, codec.loads = _json_dumps, _json_loads
    try:
        yield
    finally:
        codec.dumps, codec.loads = saved


def trip(value):
    data = codec.dumps({"ok": True, "value": codec.encode(value, _no_reference)})
    return codec.decode(codec.loads(data)["value"], _no_reference), len(data)


def main(argv: list[str]) -> int:
    args = arguments(__doc__, argv)
    setup_process()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        calls = crossed(args.assignment, Path(tmp))
    values = [v for call in calls for v in call]  # what went out, what came back
    for value in values:  # both formats bring back exactly what was sent
        for fmt in (contextlib.nullcontext, json_text):
            with fmt():
                back, _ = trip(value)
            assert _same(back, value), f"{fmt.__name__}: a value came back changed"
    packed_bytes = sum(trip(v)[1] for v in values)
    with json_text():
        text_bytes = sum(trip(v)[1] for v in values)
        before = cpu_of(trip, values, args.repeats)
    after = cpu_of(trip, values, args.repeats)
    n = len(calls)
    print(f"{n} calls of a student's function grading the sample class of {args.assignment}: "
          f"arguments out, value back; least of {args.repeats} passes (median in brackets), "
          "us per call:")
    for name, runs, size in (("JSON, raw bytes after it (before)", before, text_bytes),
                             ("MessagePack (codec)", after, packed_bytes)):
        print(f"  {name:<34} {1e6 * min(runs) / n:7.1f}  ({1e6 * statistics.median(runs) / n:.1f})"
              f"   {size / n / 1000:.1f} kB a call")
    print(f"MessagePack: {min(before) / min(after):.2f} x less CPU for the values' trips, "
          f"{1e6 * (min(before) - min(after)) / n:.1f} us a call, in one process (in grading, "
          "each side pays its half in its own process)")
    return 0


def _same(a, b) -> bool:
    if isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and (
            b.device.type == "meta" or torch.equal(a.cpu(), b.detach().cpu()) or bool(
                torch.isclose(a.cpu(), b.detach().cpu(), equal_nan=True).all()))
    if isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    return a == b or (a != a and b != b)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
