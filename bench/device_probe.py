"""Benchmark: what the device check's probe adds to each operation on the meta device.

The device check (grader/checks/devices.py) runs a student's function once more on meta
tensors with `DeviceProbe` active: every PyTorch operation the function runs passes through the
probe's Python handler, in the student's process when grading and in the notebook's own
process under `python -m grader check`. This times the operations a student's attention code
runs, three ways in turn in the same process: with no mode (meta's own kernels), under a
dispatch mode that only calls the operation (PyTorch's cost of a Python handler), and under the
probe. What the probe adds is its own handler, over the bare mode.

Each figure is the least of `--repeats` passes of `--calls` calls, the median in brackets, in
microseconds of CPU per call, on one thread. Where meta's own kernel dominates (masked_fill's,
written in Python, about half a millisecond), the probe's share is within the spread of the
runs and its difference of leasts may come out below zero.

    .venv/bin/python bench/device_probe.py [--calls N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from grader.sandbox.probe import DeviceProbe


class Bare(TorchDispatchMode):
    """A dispatch mode that only runs the operation."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def operations() -> dict:
    """What attention code runs, on meta tensors (shapes of a small test case)."""
    x = torch.empty(2, 5, 8, device="meta")
    w = torch.empty(8, 8, device="meta")
    scores = torch.empty(2, 5, 5, device="meta")
    mask = torch.ones(5, 5, dtype=torch.bool, device="meta")
    return {
        "linear (4 operations)": lambda: F.linear(x, w),
        "q @ k.T (7 operations)": lambda: x @ x.transpose(-2, -1),
        "ones(..., device=)": lambda: torch.ones(5, 5, dtype=torch.bool, device=x.device),
        "masked_fill(~mask)": lambda: scores.masked_fill(~mask, float("-inf")),
        "softmax": lambda: torch.softmax(scores, -1),
        "cat of two": lambda: torch.cat([x, x], -1),
    }


def per_call(op, mode, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        if mode is None:
            op()
        else:
            with mode():
                op()
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    modes = {"no mode": None, "bare mode": Bare, "probe": DeviceProbe}
    print(f"CPU per call on meta tensors, us, least of {args.repeats} passes of {args.calls} "
          "(median):")
    print(f"  {'':26}" + "".join(f"{name:>16}" for name in modes) + "   probe's own")
    for name, op in operations().items():
        runs = {mode: [] for mode in modes}
        for mode in modes.values():
            per_call(op, mode, 20)  # each path's first use
        for _ in range(args.repeats):  # in turn: a slow spell hits all three
            for label, mode in modes.items():
                runs[label].append(per_call(op, mode, args.calls))
        cells = "".join(f"{min(r):7.0f} ({statistics.median(r):5.0f})" for r in runs.values())
        own = min(runs["probe"]) - min(runs["bare mode"])
        print(f"  {name:26}{cells}   {own:6.0f}")


if __name__ == "__main__":
    main()
