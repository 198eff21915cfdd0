"""Reference outputs worked out once per grading process, not once per student.

A class's hidden tests call the same reference (and the same likely-mistake variants) on the
same seeded inputs for every student: a judge that grades many notebooks computes each result
once. Only what is provably a function of its arguments is remembered:

- the callable is the reference package's own code: a module-level function without captured
  variables, a module whose class it defines (its weights, buffers and settings are part of the
  key), or a `functools.partial` of those;
- every argument is plain data (numbers, strings, devices, dtypes, plain tensors, tuples,
  lists, dicts of them, such modules): anything else, a proxy of a student's object included,
  is not remembered;
- the call consumed no random numbers (checked on its first call; a callable that did is
  never remembered again).

The key holds the arguments' exact bytes, PyTorch's default dtype and grad mode. What is kept
is a detached copy of each tensor of the result (an input returned as it is must not change
with the test that owns it), shared between later calls: callers only read it.
"""

from __future__ import annotations

import functools
import hashlib
import random
import sys
import threading
import types
from collections import OrderedDict

import torch

TRUSTED = ("solutions",)  # packages whose code is the instructor's reference
MAX_ENTRIES = 512
MAX_ELEMENTS = 1 << 20  # larger tensors are not worth hashing
_NUMPY = {torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128}


class _Unkeyable(Exception):
    """This call's result cannot be proved to depend on its arguments alone."""


def _trusted(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] in TRUSTED


def _tensor_key(t: torch.Tensor) -> tuple:
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided \
            or t.numel() > MAX_ELEMENTS:
        raise _Unkeyable
    # (dtype, shape and device are hashable values that compare like their names)
    return ("tensor", t.dtype, t.shape, t.device, t.requires_grad,
            hashlib.blake2b(_data(t.detach()), digest_size=16).digest())


def _data(t: torch.Tensor):
    """The tensor's elements in row-major order, as a buffer of bytes."""
    if t.device.type == "cpu" and t.dtype in _NUMPY and t.is_contiguous() and not t.is_conj() \
            and not t.is_neg():
        return t.numpy()  # its own memory, read in place
    flat = t.resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes()


def _module_key(module: torch.nn.Module) -> tuple:
    hooks = torch.nn.modules.module
    if not _trusted(type(module)) or hooks._global_forward_hooks or \
            hooks._global_forward_pre_hooks:
        raise _Unkeyable
    parts = []
    for name, sub in module.named_modules():
        kind = type(sub)
        if sub._forward_hooks or sub._forward_pre_hooks or not (
                _trusted(kind) or kind.__module__.startswith("torch.nn.")):
            raise _Unkeyable
        public = sorted(k for k in vars(sub) if not k.startswith("_") and k != "training")
        settings = tuple((k, key(vars(sub)[k])) for k in public)
        # Every tensor it holds: its parameters and all its buffers, those left out of its
        # state_dict (persistent=False, such as a fixed table of positions) included.
        state = tuple((k, _tensor_key(v)) for k, v in (*sub.named_parameters(recurse=False),
                                                       *sub.named_buffers(recurse=False)))
        parts.append((name, kind.__module__, kind.__qualname__, sub.training, settings, state))
    return ("module", type(module).__module__, type(module).__qualname__, tuple(parts))


def _callable_key(fn) -> tuple:
    if isinstance(fn, functools.partial):
        return ("partial", _callable_key(fn.func), key(fn.args), key(fn.keywords))
    if isinstance(fn, torch.nn.Module):
        return _module_key(fn)
    if isinstance(fn, types.FunctionType) and fn.__closure__ is None and _trusted(fn) \
            and getattr(sys.modules.get(fn.__module__), fn.__qualname__, None) is fn:
        return ("function", fn.__module__, fn.__qualname__)
    raise _Unkeyable


def key(value) -> tuple:
    """A hashable stand-in for `value` that equals another's only if they hold the same data;
    raises _Unkeyable for anything else."""
    if value is None or type(value) in (bool, int, str):  # not subclasses: they may hold more
        return (type(value).__name__, value)
    if type(value) is float:
        return ("float", value.hex())
    if type(value) in (torch.dtype, torch.device):
        return (type(value).__name__, str(value))
    if isinstance(value, torch.Tensor):
        return _tensor_key(value)
    if isinstance(value, torch.nn.Module):
        return _module_key(value)
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(key(v) for v in value))
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return ("dict", tuple((k, key(v)) for k, v in sorted(value.items())))
    raise _Unkeyable


def _kept(result):
    """The result with each tensor replaced by a detached copy."""
    if isinstance(result, torch.Tensor):
        return result.detach().clone()
    if type(result) in (tuple, list):
        return type(result)(_kept(r) for r in result)
    if type(result) is dict:
        return {k: _kept(v) for k, v in result.items()}
    return result


def _random_state() -> tuple:
    return torch.random.get_rng_state(), random.getstate()


class Memo:
    """Results of trusted reference calls, least recently used dropped first."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.max_entries = max_entries
        self.results: OrderedDict = OrderedDict()
        self.random = set()  # callables seen consuming random numbers
        self.hits = self.misses = 0
        self.lock = threading.Lock()  # a Dask worker's threads grade side by side

    def call(self, fn, *args):
        """fn(*args), computed once for each distinct (fn, args) that can be keyed."""
        try:
            which = _callable_key(fn)
            k = (which, key(args), str(torch.get_default_dtype()), torch.is_grad_enabled())
        except _Unkeyable:
            return fn(*args)
        with self.lock:
            if k in self.results:
                self.hits += 1
                self.results.move_to_end(k)
                return self.results[k]
            drew_random = which in self.random
        if drew_random:
            return fn(*args)
        before = _random_state()
        result = fn(*args)
        after = _random_state()
        kept = _kept(result)
        with self.lock:
            if not torch.equal(before[0], after[0]) or before[1] != after[1]:
                self.random.add(which)
                return result
            self.misses += 1
            self.results[k] = kept
            if len(self.results) > self.max_entries:
                self.results.popitem(last=False)
        return kept


MEMO = Memo()  # one per grading process: its judge grades notebook after notebook
