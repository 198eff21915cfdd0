"""Does the student's code follow the device of its inputs? Checked without a GPU.

A tensor created without `device=` lands on the CPU; on a GPU, the first operation that mixes it
with the inputs raises an error. Grading runs on CPUs, where every tensor is on the CPU and such
a slip cannot show. So the check calls the code once more on inputs on PyTorch's `meta` device
(shapes and dtypes, no data) and watches every operation it runs: an operation that meets both
a meta tensor and a CPU tensor of one or more dimensions is the operation that fails on a GPU.

PyTorch's own meta kernels are not enough: they let `mm`, `embedding` and `index_select` mix
devices, which CUDA refuses. The rule below is CUDA's: CPU tensors of no dimensions (scalars)
mix with anything, and a few operations take CPU tensors beside GPU ones (copies, and the
indices of indexing). tests/grader/test_device_check.py holds these rules to CUDA's on a GPU.

The notebooks call it in visible tests, so `python -m grader check` reports it too. It fails
only on what it has seen: an operation that mixed devices, or an output left on the CPU. Code
that cannot run on meta tensors for another reason (`.item()`, `nonzero`: they need values) is
not judged here; its values are graded on the CPU.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .causes import cause_lines
from .compare import CheckFailure

PROBE = "meta"  # the device the check moves the inputs to
MIXED = "Expected all tensors to be on the same device"  # CUDA's words, which hints.py knows

_aten = torch.ops.aten
# The operations CUDA runs with CPU tensors beside GPU ones: copies between devices, and
# indexing, which moves CPU indices to the indexed tensor's device itself.
CROSS_DEVICE = {
    _aten.copy_.default, _aten._to_copy.default, _aten.index.Tensor,
    _aten.index_put_.default, _aten.index_put.default, _aten._index_put_impl_.default,
}


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ("," if t.dim() == 1 else "") + ")"

_TO_CPU = {_aten.copy_.default, _aten._to_copy.default}


def _to_cpu(func, args, kwargs) -> bool:
    """Whether a copy goes to the CPU: `cpu_tensor[...] = x` (copy_), or `x.cpu()` (_to_copy)."""
    if func is _aten.copy_.default:
        return args[0].device.type == "cpu"
    device = kwargs.get("device")
    return device is not None and torch.device(device).type == "cpu"


class DeviceProbe(TorchDispatchMode):
    """While active, an operation on a `meta` tensor and a CPU tensor of one or more dimensions
    raises the RuntimeError CUDA would raise, unless CUDA allows that operation to mix them (a
    plain RuntimeError, so that it crosses from the student's process as one)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _TO_CPU:  # CUDA would copy values to the CPU: meta tensors have none
            src = args[1] if func is _aten.copy_.default else args[0]
            if src.device.type == PROBE and _to_cpu(func, args, kwargs):
                return args[0] if func is _aten.copy_.default else torch.zeros(
                    src.shape, dtype=kwargs.get("dtype") or src.dtype)
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if func not in CROSS_DEVICE and any(t.device.type == PROBE for t in tensors):
            stray = next((t for t in tensors if t.device.type == "cpu" and t.dim() > 0), None)
            if stray is not None:
                name = func.overloadpacket.__name__
                dtype = str(stray.dtype).removeprefix("torch.")
                raise RuntimeError(
                    f"{MIXED}, but found at least two devices, {PROBE} and cpu! (torch's "
                    f"{name} was given {'an' if dtype[0] in 'aeiou' else 'a'} {dtype} tensor "
                    f"of shape {_shape(stray)} on the CPU)")
        return func(*args, **kwargs)


def _on_probe(value) -> bool:
    """Whether `value` holds a meta tensor, or names the meta device (`device="meta"`)."""
    return any(t.device.type == PROBE if isinstance(t, torch.Tensor) else
               (isinstance(t, torch.device) and t.type == PROBE) or (type(t) is str and t == PROBE)
               for t in tree_flatten(value)[0])


def probing(*values):
    """The probe while any of `values` holds a meta tensor or names the meta device (a device
    check's call); otherwise nothing. The student's process wraps every call it runs in this."""
    return DeviceProbe() if _on_probe(values) else contextlib.nullcontext()


def to_probe(value):
    """`value` with every tensor moved to the meta device (modules: move them with .to)."""
    flat, spec = tree_flatten(value)
    moved = [t.detach().to(PROBE) if isinstance(t, torch.Tensor) else t for t in flat]
    return spec.unflatten(moved)


def expect_follows_device(fn, inputs, what: str, case: str = "") -> None:
    """fn(*inputs), with every tensor input on another device, creates nothing on the CPU that
    meets them, and returns its tensors on their device.

    Pass modules already moved (`Module(...).to("meta")`). Code that cannot run on tensors
    without values (`.item()`, say) passes: this check judges devices only.
    """
    from .reference import run_student

    inputs = to_probe(tuple(inputs))
    where = f" ({case})" if case else ""
    try:
        with torch.no_grad():  # (PyTorch's ready-made layers stay on: not this check's question)
            got = run_student(fn, inputs, what, case, attention=False)
    except CheckFailure as failure:
        cause = failure.__cause__
        if isinstance(cause, RuntimeError) and MIXED in str(cause):
            raise CheckFailure(
                f"{what} mixes a tensor on the CPU with tensors on the device of its inputs, "
                f"which stops with an error on a GPU{where}: {cause}\nHint: create every new "
                "tensor on the device of the inputs (device=x.device, x.new_zeros(...), "
                "torch.zeros_like(x))" + cause_lines(["stray_cpu_tensor"])) from None
        return  # another error on tensors without values: not this check's question
    left = [i for i, t in enumerate(tree_flatten(got)[0])
            if isinstance(t, torch.Tensor) and t.device.type != PROBE]
    if left:
        raise CheckFailure(
            f"{what} returned a tensor on the CPU for inputs on another device{where}: its "
            f"outputs must be on the device of its inputs" + cause_lines(["stray_cpu_tensor"]))
