"""The device probe: PyTorch's operations watched on the `meta` device, in the student's process.

grader/checks/devices.py explains the check this serves (does the student's code follow the
device of its inputs?) and tests/grader/checks/test_device_check.py holds each rule below to CUDA's.
The student's process wraps every call it runs in `probing`, so this lives on the sandbox's side.
"""

from __future__ import annotations

import collections
import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

PROBE = "meta"  # the device the check moves the inputs to
MIXED = "Expected all tensors to be on the same device"  # CUDA's words, which hints.py knows

_aten = torch.ops.aten
# Operations CUDA runs with CPU tensors beside GPU ones, whatever their size: copies between
# devices, and size comparisons.
CROSS_DEVICE = {_aten.copy_.default, _aten._to_copy.default, _aten.is_same_size.default}
# Indexing takes CPU indices (CUDA moves them), not a CPU tensor indexed by GPU indices; writing
# through indices takes CPU indices and a one-element value, not more values from the CPU.
INDEX = _aten.index.Tensor
INDEX_PUT = {_aten.index_put_.default, _aten.index_put.default, _aten._index_put_impl_.default}
# Operations that refuse even a CPU scalar (a tensor of no dimensions) beside GPU tensors, as
# their tensor operands (clamp's bounds, the tensors stacked or joined) or as a mask.
NO_CPU_SCALARS = {_aten.clamp.Tensor, _aten.clamp_.Tensor, _aten.clamp_min.Tensor,
                  _aten.clamp_max.Tensor, _aten.stack.default, _aten.cat.default}
MASKS = {_aten.masked_fill.Tensor, _aten.masked_fill.Scalar, _aten.masked_fill_.Tensor,
         _aten.masked_fill_.Scalar}
VALUES_UNKNOWN = "values copied from a tensor without values cannot be read"


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ("," if t.dim() == 1 else "") + ")"


def _on_cpu(t, scalars_too: bool = False) -> bool:
    return isinstance(t, torch.Tensor) and t.is_cpu and (scalars_too or t.dim() > 0)


def _cpu_scalar(t) -> bool:
    """A CPU tensor of no dimensions: CUDA lets one go along with tensors on the device."""
    return _on_cpu(t, scalars_too=True) and t.dim() == 0


def _stray(func, args, tensors):
    """The CPU tensor CUDA would refuse in this operation on the probe's tensors, or None."""
    if func in CROSS_DEVICE:
        return None
    if func is INDEX:  # a CPU tensor indexed with indices on the device
        return args[0] if _on_cpu(args[0]) else None
    if func in INDEX_PUT:  # a CPU tensor written to, or more than one value from the CPU
        target, values = args[0], args[2]
        if _on_cpu(target, scalars_too=True):
            return target
        return values if _on_cpu(values, scalars_too=True) and values.numel() > 1 else None
    if func in MASKS and _on_cpu(args[1], scalars_too=True):
        return args[1]
    return next((t for t in tensors if _on_cpu(t, scalars_too=func in NO_CPU_SCALARS)), None)


class DeviceProbe(TorchDispatchMode):
    """While active, an operation on `meta` tensors that CUDA would refuse for a CPU tensor among
    them raises a RuntimeError in CUDA's usual words (a plain RuntimeError, so that it crosses
    from the student's process as one). CPU scalars that CUDA takes go along as meta scalars.

    A copy from meta to the CPU gives a CPU tensor whose values are unknown, as is everything
    computed from it: reading one of its values (`int()`, `.item()`, `if`) stops the call, which
    is then not judged, rather than steering the code with made-up numbers.
    """

    def __init__(self):
        super().__init__()
        self.unknown = WeakIdKeyDictionary()  # CPU tensors whose values came from meta

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = _tensors_in((args, kwargs), [])
        if func is _aten._local_scalar_dense.default and args[0] in self.unknown:
            raise NotImplementedError(VALUES_UNKNOWN)
        if any(t.is_meta for t in tensors):
            out = self._copied_to_cpu(func, args, kwargs)
            if out is not None:
                return out
            stray = _stray(func, args, tensors)
            if stray is not None:
                name = func.overloadpacket.__name__
                dtype = str(stray.dtype).removeprefix("torch.")
                raise RuntimeError(
                    f"{MIXED}, but found at least two devices, {PROBE} and cpu! (torch's "
                    f"{name} was given {'an' if dtype[0] in 'aeiou' else 'a'} {dtype} tensor "
                    f"of shape {_shape(stray)} on the CPU)")
            if func not in CROSS_DEVICE and func is not INDEX and func not in INDEX_PUT \
                    and any(_cpu_scalar(t) for t in tensors):
                # CPU scalars go along, as in CUDA (meta's own kernels refuse some of them)
                flat, spec = tree_flatten((args, kwargs))
                args, kwargs = spec.unflatten([t.to(PROBE) if _cpu_scalar(t) else t
                                               for t in flat])
        out = func(*args, **kwargs)
        if self.unknown and any(t in self.unknown for t in tensors):
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                    self.unknown[t] = True
        return out

    def _copied_to_cpu(self, func, args, kwargs):
        """CUDA copies values to the CPU where meta has none: `cpu_tensor[...] = x` keeps the
        CPU tensor (its values now unknown), `x.cpu()` gives one of unknown values."""
        if func is _aten.copy_.default and args[0].device.type == "cpu":
            self.unknown[args[0]] = True
            return args[0]
        if func is _aten._to_copy.default and args[0].device.type == PROBE:
            device = kwargs.get("device")
            if device is not None and torch.device(device).type == "cpu":
                out = torch.zeros(args[0].shape, dtype=kwargs.get("dtype") or args[0].dtype)
                self.unknown[out] = True
                return out
        return None


def _tensors_in(value, found: list) -> list:
    """The tensors among an operation's arguments, appended to `found`: walked rather than
    flattened with pytree, as _on_probe below, for the same reason (every operation the probe
    watches asks it). An operation's arguments hold tensors directly or in lists (its schema's
    Tensor[]); the walk looks inside the containers _on_probe does."""
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (tuple, list, collections.deque)):
        for v in value:
            _tensors_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, found)
    return found


def _on_probe(value) -> bool:
    """Whether `value` holds a meta tensor, or names the meta device (`device="meta"`), looking
    inside the containers PyTorch's pytree looks inside (tuples, named ones included, lists,
    dicts, deques). Walked here rather than flattened: every call a student's process runs asks
    this, and this walk costs a fraction of pytree's flatten."""
    if isinstance(value, torch.Tensor):
        return value.device.type == PROBE
    if isinstance(value, (tuple, list, collections.deque)):
        return any(_on_probe(v) for v in value)
    if isinstance(value, dict):
        return any(_on_probe(v) for v in value.values())
    if isinstance(value, torch.device):
        return value.type == PROBE
    return type(value) is str and value == PROBE


def probing(*values):
    """The probe while any of `values` holds a meta tensor or names the meta device (a device
    check's call); otherwise nothing. The student's process wraps every call it runs in this."""
    return DeviceProbe() if _on_probe(values) else contextlib.nullcontext()
