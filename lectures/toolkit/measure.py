"""Measure what a computation costs: wall time and memory, and how both grow with size.

Used by the lectures that compare attention with RNNs and convolutions (05) and that make
attention cheaper (08). The machines that run the course are shared and noisy, so timings are
medians over repeats, and memory is counted from the tensors PyTorch actually allocates rather
than from the process size (which the allocator and other libraries blur).

- `median_time`: seconds per call, the median over repeats after a warm-up.
- `min_times`: CPU seconds per call of several calls, timed in turns: the fastest time two turns
  reach; the steadiest estimate of the work itself on a busy machine.
- `largest_intermediate`: bytes of the biggest tensor an operation creates inside a call; for
  attention that is the (L, S) score matrix, for tiled attention one tile.
- `count_operations`: how many aten operations a call runs, e.g. one per time step in an RNN.
- `peak_memory`: the most bytes alive at once inside a call, from `torch.profiler`'s allocation
  records (`profile_memory=True`).
- `power_law_exponent`: the slope on log-log axes, e.g. 2 for memory that grows like n^2.
- `median_exponent`: that slope for times taken in turns (`min_times`): fitted within each turn,
  the median over turns, so a spell of the machine running slow cancels out.
- `plot_scaling`: measured curves against size on labelled log-log axes, with guide slopes.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import torch
from matplotlib.ticker import NullLocator
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# Counted the same way the assignments' checks count them (the student edition ships grader, not
# the lectures' toolkit): aten operations, and the peak of the profiler's allocation records.
from grader.checks.memory import count_operations, growth_exponent, peak_memory  # noqa: F401


def median_time(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Seconds one call of `fn()` takes: the median of `repeats` timed calls.

    The warm-up calls are not timed (first calls pay for lazy initialisation and cold caches);
    the median ignores the odd call slowed down by another process on a shared machine. On such
    a machine, also run PyTorch on one thread (`torch.set_num_threads(1)`): a multi-threaded
    operation can wait milliseconds for its helper threads to be scheduled, far longer than
    the work itself for small tensors.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Timings(dict):
    """{key: seconds}, with how many turns measured them (`turns`), the keys whose time no two
    turns agreed on (`unmatched`: their single fastest turn is kept), and every timed turn
    (`samples`: {key: [seconds in turn 1, turn 2, ...]})."""

    def __init__(self, seconds: Mapping, turns: int, unmatched: list, samples: Mapping):
        super().__init__(seconds)
        self.turns = turns
        self.unmatched = unmatched
        self.samples = dict(samples)


def min_times(calls: Mapping[object, Callable[[], object]], repeats: int = 5, warmup: int = 1,
              clock: Callable[[], float] = time.process_time, agree: float = 0.05,
              max_repeats: int | None = None) -> Timings:
    """{key: seconds} for each of several calls: the fastest time that two timed calls reach.

    Made for scaling curves on a shared machine. The calls are timed in turns (all of them once,
    then all again, ...), so a burst of load from another program falls on every size alike
    rather than on one point of the curve. The default clock is this process's CPU time, which
    stops while another program holds the core: waiting is not counted, only the work (run
    PyTorch on one thread, `torch.set_num_threads(1)`, so that CPU time and work agree). Inside
    a virtual machine, though, the time the host lends the core to another machine can still
    count, so some turns come out slower than the work.

    Interference adds time, a different amount each time, and the odd turn comes out faster
    than the rest (memory that happened to be at hand, say); the work itself comes out the same
    whenever it runs undisturbed. So each call's time is the fastest that two of its turns
    reach, within `agree` (5 %) of each other. After `repeats` turns the timing goes on, one
    turn at a time, until every call's fastest turn is matched by another, or `max_repeats`
    turns (4 x `repeats`) have run. The result's `turns` says how many it took; a call whose
    turns never agreed keeps its fastest and is listed in `unmatched`.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    max_repeats = 4 * repeats if max_repeats is None else max_repeats
    if max_repeats < repeats:
        raise ValueError(f"max_repeats ({max_repeats}) is below repeats ({repeats})")
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    times: dict = {key: [] for key in calls}
    turns = 0
    while turns < repeats or (turns < max_repeats and not all(
            _reached_twice(seconds, agree) == min(seconds) for seconds in times.values())):
        for key, fn in calls.items():
            start = clock()
            fn()
            times[key].append(clock() - start)
        turns += 1
    floors = {key: _reached_twice(seconds, agree) for key, seconds in times.items()}
    return Timings({key: min(times[key]) if floor is None else floor
                    for key, floor in floors.items()}, turns,
                   [key for key, floor in floors.items() if floor is None], times)


def _reached_twice(seconds: list[float], agree: float) -> float | None:
    """The fastest of these times that another is within `agree` of; None if no two agree."""
    ordered = sorted(seconds)
    for fastest, next_one in itertools.pairwise(ordered):
        if next_one <= fastest * (1 + agree):
            return fastest
    return None


def _storages(tensors) -> dict[int, int]:
    """{data pointer: bytes} of the storages behind the tensors in a (nested) argument list."""
    found = {}
    for t in tree_flatten(tensors)[0]:
        if isinstance(t, torch.Tensor) and t.layout == torch.strided:
            storage = t.untyped_storage()
            found[storage.data_ptr()] = storage.nbytes()
    return found


class _LargestNewTensor(TorchDispatchMode):
    """Watches every aten operation and remembers the largest storage one of them created."""

    def __init__(self, where=None):
        super().__init__()
        self.nbytes = 0
        self.shape = None
        self.where = where

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = _storages((args, kwargs))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
                continue
            storage = t.untyped_storage()
            # a view or an in-place result shares an input's storage: nothing new was allocated
            if storage.data_ptr() in inputs or storage.nbytes() <= self.nbytes:
                continue
            if self.where is not None and not self.where(tuple(t.shape)):
                continue
            self.nbytes, self.shape = storage.nbytes(), tuple(t.shape)
        return out


def largest_intermediate(fn: Callable[[], object], where: Callable[[tuple], bool] | None = None
                         ) -> tuple[int, tuple[int, ...] | None]:
    """(bytes, shape) of the largest tensor that any operation allocates while `fn()` runs.

    Views (transpose, reshape of a contiguous tensor, slicing) and in-place updates allocate
    nothing and are not counted. This is exact and independent of machine load, which makes it
    the clearest way to see that plain attention builds an (L, S) matrix and tiled attention
    does not. It says nothing about how many such tensors are alive at once: see `peak_memory`.

    `where(shape)` restricts the search to tensors of some shapes, e.g. `lambda s: s[-1] != d`
    leaves out the (L, d) output, which every attention must allocate, to find the largest
    score tensor. (0, None) when nothing qualifies.
    """
    mode = _LargestNewTensor(where)
    with mode:
        fn()
    return mode.nbytes, mode.shape


def power_law_exponent(sizes: Iterable[float], values: Iterable[float]) -> float:
    """The exponent p in values ~ c * sizes**p: the least-squares slope on log-log axes, the
    grader's own fit (`grader.checks.memory.growth_exponent`), so a lecture and a test read a
    growth the same way.

    Fit on the larger sizes only when small sizes are dominated by fixed overheads.
    """
    return growth_exponent(list(sizes), list(values))


def median_exponent(sizes: Iterable[float], samples: Iterable[Iterable[float]]) -> float:
    """The exponent p in time ~ c * size**p from times taken in turns: `power_law_exponent`
    fitted within each turn, then the median over the turns.

    `samples` holds, for each size, its time in every turn (`min_times(...).samples[key]`).
    A shared machine's speed can change for seconds at a time, so the fastest time of one size
    and that of another may come from spells of different speed, and a slope through them is off
    by their ratio. The sizes of one turn are timed within moments of each other: a slow spell
    slows them alike and drops out of that turn's slope, and the median leaves out the turns in
    which a spell began or ended.
    """
    sizes, per_size = list(sizes), [list(times) for times in samples]
    if len(per_size) != len(sizes) or len({len(times) for times in per_size}) != 1:
        raise ValueError("need, for each size, one time per turn, and as many turns for each")
    return float(statistics.median(power_law_exponent(sizes, turn) for turn in
                                   zip(*per_size, strict=True)))


def format_bytes(nbytes: float) -> str:
    """1536 -> '1.5 KiB': sizes in the binary units that memory is sold in."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


GUIDE_STYLES = {0: ":", 1: "--", 2: "-.", 3: (0, (5, 1, 1, 1, 1, 1))}  # slope p -> line style


def plot_scaling(ax, sizes, series: Mapping[str, Iterable[float]], *, title: str, xlabel: str,
                 ylabel: str, guides: Iterable[int] = (1, 2), marker: str = "o"):
    """Plot each named series against `sizes` on log-log axes, with grey guide lines.

    A guide of slope p is anchored at the first point of the first series and shows how
    something growing exactly like n^p would continue, so a curve parallel to it grows like n^p.
    Guides differ in line style (`GUIDE_STYLES`), not only in label, so they can be told apart
    in print; the series keep the colour cycle, and the legend shows both. The x ticks are the
    measured sizes themselves.
    """
    sizes = np.asarray(list(sizes), float)
    first = None
    for label, values in series.items():
        values = np.asarray(list(values), float)
        ax.plot(sizes, values, marker=marker, label=label)
        first = values if first is None else first
    for p in guides:
        ax.plot(sizes, first[0] * (sizes / sizes[0]) ** p, color="0.4", lw=1.0,
                ls=GUIDE_STYLES.get(p, "--"), label=f"~ n^{p}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, labels=[f"{n:g}" for n in sizes])  # the measured sizes, no clutter
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    return ax
