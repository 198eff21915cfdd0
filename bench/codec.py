"""Benchmark: the values that cross between the grader and a student's process, two formats.

Grades the sample class of one assignment (stages 1 and 2, in this process) and keeps what each
call of a student's function sent (its arguments) and brought back (its value). Then, in this
process, times each value's whole trip, encode + dumps on one side, loads + decode on the other
(grader/sandbox/codec.py), in two formats: raw bytes after the JSON text (the codec) against
the same messages with each tensor's bytes as base64 text inside the JSON (the codec before,
its two tensor functions and JSON reading and writing, kept here as the baseline). Each figure
is the least of `--repeats` passes over every value (the median in brackets).

    .venv/bin/python bench/codec.py [ASSIGNMENT] [--repeats R]
"""

from __future__ import annotations

import base64
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from in_process import arguments, cpu_of, grade_sample_class

from grader.course import setup_process
from grader.sandbox import codec


def crossed(assignment: str, work: Path) -> list:
    """(arguments, value) of every call of a student's function grading the sample class."""
    from grader.sandbox.remote import Link

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


_RAW_ENCODE, _RAW_DECODE = codec.encode_tensor, codec.decode_tensor


def _base64_tensor(t: torch.Tensor) -> dict:
    """The codec's encode_tensor before: the bytes as base64 text."""
    node = _RAW_ENCODE(t)
    if "data" in node:
        node["data"] = base64.b64encode(node["data"]).decode("ascii")
    return node


def _base64_decode_tensor(node: dict) -> torch.Tensor:
    """The codec's decode_tensor before: the bytes from base64 text (validated), then the same
    checks and the same tensor."""
    if "data" in node:
        node["data"] = base64.b64decode(node["data"], validate=True)
    return _RAW_DECODE(node)


@contextlib.contextmanager
def base64_text():
    """The codec as it was: tensors' bytes as base64 text in a JSON message."""
    saved = codec.encode_tensor, codec.decode_tensor, codec.dumps, codec.loads
    codec.encode_tensor, codec.decode_tensor = _base64_tensor, _base64_decode_tensor
    codec.dumps = lambda message: json.dumps(message, allow_nan=False).encode("utf-8")
    codec.loads = lambda data: json.loads(data.decode("utf-8"))
    try:
        yield
    finally:
        codec.encode_tensor, codec.decode_tensor, codec.dumps, codec.loads = saved


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
        for fmt in (contextlib.nullcontext, base64_text):
            with fmt():
                back, _ = trip(value)
            assert _same(back, value), f"{fmt.__name__}: a value came back changed"
    raw_bytes = sum(trip(v)[1] for v in values)
    with base64_text():
        text_bytes = sum(trip(v)[1] for v in values)
        before = cpu_of(trip, values, args.repeats)
    after = cpu_of(trip, values, args.repeats)
    n = len(calls)
    print(f"{n} calls of a student's function grading the sample class of {args.assignment}: "
          f"arguments out, value back; least of {args.repeats} passes (median in brackets), "
          "us per call:")
    for name, runs, size in (("base64 text in the JSON (before)", before, text_bytes),
                             ("raw bytes after the JSON (codec)", after, raw_bytes)):
        print(f"  {name:<34} {1e6 * min(runs) / n:7.1f}  ({1e6 * statistics.median(runs) / n:.1f})"
              f"   {size / n / 1000:.1f} kB a call")
    print(f"raw bytes: {min(before) / min(after):.2f} x less CPU for the values' trips, "
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
