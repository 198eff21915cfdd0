"""Does the student's code follow the device of its inputs? Checked without a GPU.

A tensor created without `device=` lands on the CPU; on a GPU, the first operation that mixes it
with the inputs raises an error. Grading runs on CPUs, where every tensor is on the CPU and such
a slip cannot show. So the check calls the code once more on inputs on PyTorch's `meta` device
(shapes and dtypes, no data) and watches every operation it runs: an operation that meets both
a meta tensor and a CPU tensor of one or more dimensions is the operation that fails on a GPU.

PyTorch's own meta kernels are not enough: they let `mm`, `embedding` and `index_select` mix
devices, which CUDA refuses. The rules below are CUDA's: CPU tensors of no dimensions (scalars)
mix with most operations, but not with clamp's bounds, `stack` or `cat`, nor as a mask; copies
take CPU tensors of any size, indexing takes CPU indices, and writing through indices takes a
single CPU value. tests/grader/checks/test_device_check.py holds each rule to what CUDA does, on
a GPU.

The notebooks call it in visible tests, so `python -m grader check` reports it too. It fails
only on what it has seen: an operation that mixed devices, or an output left on the CPU. Code
that cannot run on meta tensors for another reason (`.item()`, `nonzero`: they need values, and
so does reading a value copied back to the CPU) is not judged here; its values are graded on
the CPU.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten

from grader.sandbox.probe import MIXED, PROBE

from .causes import cause_lines
from .compare import CheckFailure


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
