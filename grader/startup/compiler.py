"""PyTorch's compiler (torch._dynamo), imported when something compiles, not before.

About 290 of PyTorch's Python-written operations (the references behind the meta device, type
promotion, optimizers' helpers) are wrapped so that the compiler never traces into them
(`torch._disable_dynamo`). The wrapper imports the compiler on its first call only to build that
guard, a start-up cost and anonymous memory in every sandbox server (docs/performance.md),
which every fork of it maps again. Until the compiler is
imported nothing can be compiling, so the guard has nothing to do. `defer()` gives each wrapped
function a stand-in guard that calls it directly while the compiler is not imported, and
PyTorch's own guard from the first call after it is (a student's `torch.compile`, an
optimizer's step): what each call computes is unchanged either way.
"""

from __future__ import annotations

import gc
import sys
import types

_COMPILER = "torch._dynamo"


def _guard(fn, recursive: bool):
    """What `torch._disable_dynamo`'s wrapper calls instead of `fn` (it looks for the guard in
    fn.__dynamo_disable, and builds PyTorch's own there when it finds none)."""

    def guarded(*args, **kwargs):
        compiler = sys.modules.get(_COMPILER)
        disable = getattr(compiler, "disable", None)  # None while it is being imported
        if disable is None:
            return fn(*args, **kwargs)
        real = disable(fn, recursive, wrapping=False)
        fn.__dynamo_disable = real  # PyTorch's own guard from now on
        return real(*args, **kwargs)

    return guarded


def _wrapper_code(torch) -> types.CodeType | None:
    """The code of the wrapper `torch._disable_dynamo` makes (its nested function `inner`)."""
    made_by = getattr(getattr(torch, "_compile", None), "_disable_dynamo", None)
    for const in getattr(getattr(made_by, "__code__", None), "co_consts", ()):
        if isinstance(const, types.CodeType) and const.co_name == "inner":
            return const
    return None


def defer() -> int:
    """Give every function PyTorch has wrapped so far a stand-in guard; how many it found (0:
    the compiler is already imported, or this PyTorch wraps them differently, and its own lazy
    import stays). Call it before the start-up's objects are frozen
    (grader.startup.collector.resume): the collector's search for the wrappers does not look at
    frozen objects."""
    if _COMPILER in sys.modules:
        return 0
    import torch

    code = _wrapper_code(torch)
    if code is None:
        return 0
    deferred = 0
    for wrapper in gc.get_referrers(code):  # the functions whose code it is
        if not isinstance(wrapper, types.FunctionType) or not wrapper.__closure__:
            continue
        cells = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__, strict=True))
        if "fn" not in cells or "recursive" not in cells:
            continue
        fn = cells["fn"].cell_contents
        if getattr(fn, "__dynamo_disable", None) is None:
            fn.__dynamo_disable = _guard(fn, cells["recursive"].cell_contents)
            deferred += 1
    return deferred
