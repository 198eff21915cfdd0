"""Python's cyclic garbage collector, kept out of a process's start-up.

Importing torch makes hundreds of thousands of objects that live as long as the process. The
collector counts them as they arrive and scans all of them, again and again: five full collections
during the import of torch, its compiler and IPython. So the grader's long-lived processes (the
pool's fork server, each sandbox's server) import with the collector paused, then freeze what the
start-up made (gc.freeze: never scanned again, so a full collection later, in the process or in one
forked from it, neither walks nor writes to those objects, whose pages stay shared) and let the
collector run for what comes after. What the imports left as garbage stays: a few hundred objects.
The grading command does the same around its own imports. The gain is in docs/performance.md's
table.
"""

import contextlib
import gc


def pause() -> None:
    gc.disable()


def resume() -> None:
    """The start-up is over: freeze what it made, collect what comes next."""
    gc.freeze()
    gc.enable()


@contextlib.contextmanager
def paused():
    """The start-up's imports inside this block; `resume` after it (a collector that was
    already off stays off)."""
    if not gc.isenabled():
        yield
        return
    pause()
    try:
        yield
    finally:
        resume()
