"""What a computation costs in memory and in operations, and checks on how that grows.

Memory is counted from the tensors PyTorch allocates (the profiler's allocation records), not
from the process size, so the numbers are exact, the same on every run and on any load, and
need no GPU. Shipped with the student edition: the notebooks measure with these.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys

from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from .compare import CheckFailure


@contextlib.contextmanager
def _quiet_native_stderr():
    """The profiler's C++ backend prints a line on every start and stop: keep it out of the
    notebook (Python exceptions are unaffected)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no file descriptor 2 here: nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


def peak_memory(fn) -> int:
    """The most bytes allocated and not yet freed at any moment while `fn()` runs.

    Memory held before the call is the baseline (zero); what `fn` returns is still alive at the
    end, so it counts. CPU allocations only.
    """
    with _quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU],
                                         profile_memory=True) as prof:
        fn()
    records = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                     if e.name() == "[memory]")
    alive = peak = 0
    for _, nbytes in records:
        alive += nbytes  # an allocation is positive, a free negative
        peak = max(peak, alive)
    return peak


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def count_operations(fn) -> int:
    """How many aten operations (the kernels PyTorch runs) `fn()` runs: tiles that are skipped
    cost none."""
    counter = _CountOps()
    with counter:
        fn()
    return counter.count


def growth_exponent(sizes, values) -> float:
    """p in values ~ c * sizes**p, fitted by least squares to every (log size, log value) pair.

    Every measurement counts, not only the first and the last: one size that happened to
    allocate a little more (a tile that fits at one length and not at the next) moves the fit
    less than it moves the line through the two ends. With two sizes the two agree.
    """
    sizes, values = list(sizes), list(values)
    if len(sizes) < 2 or len(sizes) != len(values) or min(*sizes, *values) <= 0:
        raise ValueError("need at least two positive sizes and as many positive values")
    xs, ys = [math.log(n) for n in sizes], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    if spread == 0:
        raise ValueError("need at least two different sizes")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


def _table(sizes, values) -> str:
    return ", ".join(f"n = {n}: {v / 1024:.1f} KiB" for n, v in zip(sizes, values, strict=True))


def expect_linear_memory(sizes, peaks, what: str, at_most: float = 1.3) -> float:
    """Fail unless the peak memory grows at most like n**at_most, the exponent fitted over every
    size (growth_exponent); returns the exponent.

    A computation that forms an (n, n) matrix grows like n**2; one that keeps a fixed-size tile
    and writes an (n, d) output grows like n (slightly less at small n, where the tile
    dominates).
    """
    p = growth_exponent(sizes, peaks)
    if p > at_most:
        raise CheckFailure(
            f"the peak memory of {what} grows like n^{p:.2f} ({_table(sizes, peaks)}; the "
            f"exponent fitted over all {len(sizes)} lengths), expected at most n^{at_most:g}: "
            "something of size n x n is being built. Keep one "
            "(block_q, block_k) tile of scores at a time, never the whole score matrix.")
    return p
