"""The only format that crosses between a student's process and the grader: plain data.

Nothing from the student's process is ever unpickled or executed by the grader. A message is
MessagePack (msgpack's C codec) holding only maps (keyed by strings or bytes), lists, strings,
bytes, numbers, booleans and nil: extension types are refused, timestamps read as numbers.
Tensors travel as dtype, shape and their raw bytes (binary, as they are: no base64) and are
rebuilt here as plain tensors (never a student's subclass); anything that is not data becomes a
numbered reference to an object that stays in the student's process.

MessagePack rather than JSON text with the tensors' bytes after it: nothing to find in the text
and put back, no Python called for each map (bench/codec.py measures a call's trip both
ways on the calls that grade a sample class).
"""

from __future__ import annotations

import math

import msgpack
import numpy as np
import torch

MAX_MESSAGE = 256 * 2**20  # bytes; a bigger reply counts as a misbehaving submission
MAX_DEPTH = 32

_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}
_NAMES = {d: name for name, d in _DTYPES.items()}
# The dtypes numpy holds as they are (all but bfloat16): their bytes are read and written
# through numpy, a single copy in C whatever the tensor's strides.
_NUMPY = {d: torch.empty(0, dtype=d).numpy().dtype for d in _DTYPES.values()
          if d is not torch.bfloat16}


class CodecError(ValueError):
    """A message that is not in the agreed format."""


class Ref:
    """A reference to an object living in the other process: its number, type name and repr."""

    __slots__ = ("id", "type", "repr")

    def __init__(self, id: int, type: str, repr: str):
        self.id, self.type, self.repr = id, type, repr


# ----- encoding (used on both sides) -------------------------------------------------------

def encode_tensor(t: torch.Tensor) -> dict:
    t = torch.Tensor.detach(t)
    device, dtype = t.device.type, t.dtype
    out = {"T": "tensor", "dtype": _NAMES.get(dtype) or str(dtype).removeprefix("torch."),
           "shape": list(t.shape), "device": device}
    if device != "meta":
        strided = _strided(t)
        if strided is None:
            out["data"] = _raw(t, device, dtype)  # (binary in the message, as they are)
        else:  # a non-contiguous view arrives as one: its buffer, and where each entry is
            out["data"], out["stride"] = _raw(strided[0], device, dtype), strided[1]
    return out


def _strided(t: torch.Tensor) -> tuple[torch.Tensor, list[int]] | None:
    """For a non-contiguous view that no two entries overlap in (a transpose, a slice with a
    step, a column), the part of its buffer it spans and its strides; None for a contiguous
    tensor, or a view spanning much more memory than its entries (only its values travel).
    Code under test may assume a layout (`.view` on a transposed input): the layout a test
    chose must reach it, in both directions."""
    if t.is_contiguous() or t.numel() == 0 or t.is_conj() or t.is_neg():
        return None
    stride = list(t.stride())
    if not non_overlapping(list(t.shape), stride):
        return None
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, stride, strict=True))
    if span > 4 * t.numel() + 64:
        return None
    return torch.as_strided(t, (span,), (1,)), stride


def same_layout(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` (detached) laid out as `t` is: a transposed or sliced view stays one (a
    plain clone makes a sliced view contiguous). The copies a call hands over, on both sides of
    the boundary, so code that assumes a layout meets the layout the test chose."""
    t = t.detach()
    stride = list(t.stride())
    if t.is_contiguous() or t.numel() == 0 or not non_overlapping(list(t.shape), stride):
        return t.clone()
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, stride, strict=True))
    return t.new_empty(span).as_strided(t.shape, stride).copy_(t)


def non_overlapping(shape: list[int], stride: list[int]) -> bool:
    """Whether no two entries of a view of this shape and these strides share memory."""
    extent = 1  # entries the dimensions taken so far reach, from the first
    for st, n in sorted((st, n) for n, st in zip(shape, stride, strict=True) if n > 1):
        if st < extent:  # this dimension's next step lands inside what is reached already
            return False
        extent += (n - 1) * st
    return True


def _raw(t: torch.Tensor, device: str, dtype: torch.dtype) -> bytes:
    """The tensor's elements as bytes, in row-major order."""
    if device == "cpu" and dtype in _NUMPY and not t.is_conj() and not t.is_neg():
        return torch.Tensor.numpy(t).tobytes()
    data = torch.Tensor.contiguous(torch.Tensor.cpu(torch.Tensor.resolve_neg(
        torch.Tensor.resolve_conj(t))))
    return data.reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""


def encode(value, to_ref, depth: int = 0):
    """A tree of plain data for `value`; objects that are not data go through to_ref(obj) -> Ref."""
    if depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    kind = type(value)  # the usual values first, by their exact type (subclasses go below)
    if kind is torch.Tensor:
        return encode_tensor(value)
    if kind is tuple or kind is list:
        return {"T": kind.__name__, "v": [encode(v, to_ref, depth + 1) for v in value]}
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        value = int(value)
        return value if abs(value) < 2**63 else {"T": "int", "v": str(value)}
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else {"T": "float", "v": repr(value)}
    if isinstance(value, torch.Tensor):  # the usual values first (no other check claims them)
        return encode_tensor(value)
    if type(value) in (tuple, list) or (isinstance(value, tuple) and hasattr(value, "_fields")):
        return {"T": "tuple" if isinstance(value, tuple) else "list",
                "v": [encode(v, to_ref, depth + 1) for v in value]}
    if _is_numpy_array(value):
        return {**encode_tensor(torch.from_numpy(value.copy())), "T": "ndarray"}
    if isinstance(value, np.generic):  # numpy scalars (an array of objects is not one: it
        return encode(value.item(), to_ref, depth + 1)  # goes as a reference, below)
    if isinstance(value, torch.dtype):
        return {"T": "dtype", "v": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"T": "device", "v": str(value)}
    if isinstance(value, torch.Size):
        return {"T": "tuple", "v": [int(s) for s in value]}
    if isinstance(value, torch.Generator):
        return {"T": "generator", "seed": int(value.initial_seed()),
                "state": encode_tensor(value.get_state())}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"T": "dict", "v": {k: encode(v, to_ref, depth + 1) for k, v in value.items()}}
    ref = to_ref(value)
    return {"T": "ref", "id": ref.id, "type": ref.type, "repr": ref.repr}


def _is_numpy_array(value) -> bool:
    import sys

    np = sys.modules.get("numpy")
    return (np is not None and isinstance(value, np.ndarray) and value.dtype.kind in "biuf"
            and value.dtype.byteorder in "=|<")


# Strings go as UTF-8; a lone surrogate (a student may print one) crosses as it is, as JSON's
# escapes carried it before.
_TEXT = "surrogatepass"


def dumps(message: dict) -> bytes:
    """The message in MessagePack; raises TypeError for a value that is not data."""
    data = msgpack.packb(message, use_bin_type=True, unicode_errors=_TEXT)
    if len(data) > MAX_MESSAGE:
        raise CodecError(f"message of {len(data) / 2**20:.0f} MB is over the "
                         f"{MAX_MESSAGE / 2**20:.0f} MB limit")
    return data


# ----- decoding (the grader uses this on everything the student's process sends) -----------

def decode_tensor(node: dict) -> torch.Tensor:
    """A plain tensor of its own (a copy of the message's bytes; its storage, like numpy's,
    cannot be resized)."""
    dtype = _DTYPES.get(node.get("dtype"))
    shape = node.get("shape")
    if dtype is None:
        raise CodecError(f"unknown tensor dtype {node.get('dtype')!r}")
    if type(shape) is not list:
        raise CodecError("bad tensor shape")
    for size in shape:
        if type(size) is not int or size < 0:
            raise CodecError("bad tensor shape")
    numel = math.prod(shape)
    if node.get("device") == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    raw = node.get("data")
    if type(raw) is not bytes:
        raise CodecError("tensor data is not raw bytes")
    itemsize = dtype.itemsize
    if "stride" in node:
        return _decode_strided(node["stride"], shape, dtype, raw)
    if len(raw) != numel * itemsize:
        raise CodecError(f"tensor data has {len(raw)} bytes, its shape {shape} needs "
                         f"{numel * itemsize}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    if dtype in _NUMPY:
        return torch.from_numpy(np.frombuffer(raw, dtype=_NUMPY[dtype]).copy()).reshape(shape)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def _decode_strided(stride, shape: list[int], dtype: torch.dtype, raw: bytes) -> torch.Tensor:
    """A non-contiguous view (`_strided`): its buffer, exactly as long as the strides need,
    viewed with them. Strides under which two entries would share memory are refused, so no
    view holds more entries than the bytes that came (nothing is amplified)."""
    if type(stride) is not list or len(stride) != len(shape) or \
            any(type(st) is not int or st < 0 for st in stride):
        raise CodecError("bad tensor strides")
    if not non_overlapping(shape, stride) or math.prod(shape) == 0:
        raise CodecError("tensor strides that overlap")
    span = 1 + sum((n - 1) * st for n, st in zip(shape, stride, strict=True))
    if len(raw) != span * dtype.itemsize:
        raise CodecError(f"tensor data has {len(raw)} bytes, its strides need "
                         f"{span * dtype.itemsize}")
    if dtype in _NUMPY:
        buffer = torch.from_numpy(np.frombuffer(raw, dtype=_NUMPY[dtype]).copy())
    else:
        buffer = torch.frombuffer(bytearray(raw), dtype=dtype).clone()
    return buffer.as_strided(shape, stride)


def decode(node, from_ref, depth: int = 0):
    """The value a tree stands for; references become from_ref(Ref)."""
    try:
        return _decode(node, from_ref, depth)
    except CodecError:
        raise
    except (ValueError, TypeError, RuntimeError, OverflowError) as e:  # a message, bad data
        raise CodecError(f"bad value in message: {type(e).__name__}: {e}") from None


def _decode(node, from_ref, depth: int = 0):
    if depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    if type(node) is not dict:  # (a message holds dicts, lists, strings, bytes, numbers)
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            raise CodecError("bare list in message")
        raise CodecError(f"unexpected {type(node).__name__} in message")
    kind = node.get("T")
    if kind == "tensor":
        return decode_tensor(node)
    if kind == "ndarray":
        return decode_tensor(node).numpy()
    if kind in ("tuple", "list"):
        items = [_decode(v, from_ref, depth + 1) for v in _list(node.get("v"))]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        v = node.get("v")
        if not isinstance(v, dict):
            raise CodecError("bad dict")
        return {str(k): _decode(x, from_ref, depth + 1) for k, x in v.items()}
    if kind == "int":
        return int(str(node.get("v")))
    if kind == "float":
        return float(str(node.get("v")))
    if kind == "dtype":
        if node.get("v") not in _DTYPES:
            raise CodecError(f"unknown dtype {node.get('v')!r}")
        return _DTYPES[node["v"]]
    if kind == "device":
        return torch.device(str(node.get("v")))
    if kind == "generator":
        g = torch.Generator()
        g.set_state(decode_tensor(node.get("state", {})))
        return g
    if kind == "ref":
        if type(node.get("id")) is not int:
            raise CodecError("bad reference")
        return from_ref(Ref(node["id"], str(node.get("type", "?"))[:100],
                            str(node.get("repr", ""))[:200]))
    raise CodecError(f"unknown value kind {kind!r}")


def loads(data: bytes) -> dict:
    """The message `dumps` made. Anything else is refused (CodecError): bytes that are not one
    MessagePack value, or hold more after it, an extension type, a map key that is not a
    string, nesting deeper than msgpack's stack, text that is not UTF-8. msgpack reads no
    length it is given past the end of the message (its limits are the message's size)."""
    if len(data) > MAX_MESSAGE:
        raise CodecError("message over the size limit")
    try:
        message = msgpack.unpackb(data, raw=False, strict_map_key=True, ext_hook=_extension,
                                  timestamp=1, unicode_errors=_TEXT)
    except (ValueError, TypeError, msgpack.UnpackException) as e:
        raise CodecError(f"not a message: {type(e).__name__}") from None
    if not isinstance(message, dict):
        raise CodecError("message is not an object")
    return message


def _extension(code: int, data: bytes):
    raise CodecError(f"extension type {code} in message")


def _list(v):
    if not isinstance(v, list):
        raise CodecError("bad sequence")
    return v


def unchanged(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether `after` holds exactly what `before` held (NaN where it held NaN): has a call
    left its input as it was given?"""
    before, after = before.detach(), after.detach()
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    if before.device.type == "meta":  # a device check's input holds no values (devices.py)
        return after.device.type == "meta"
    if torch.equal(before, after):  # the usual case, in one operation
        return True
    if before.is_floating_point():  # NaN is never equal to itself: equal where both are NaN
        return bool(torch.isclose(before, after, rtol=0, atol=0, equal_nan=True).all())
    return False
