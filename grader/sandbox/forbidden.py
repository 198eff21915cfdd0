"""Switch off PyTorch's ready-made pieces while a student's code is being checked."""

from __future__ import annotations

import contextlib
import sys

import torch
import torch.nn.functional as F

from grader.failure import CheckFailure

# (owner, attribute, how the student would have written it)
ATTENTION = [
    (F, "scaled_dot_product_attention", "F.scaled_dot_product_attention"),
    (F, "multi_head_attention_forward", "F.multi_head_attention_forward"),
    (torch.nn.MultiheadAttention, "forward", "nn.MultiheadAttention"),
    (torch.nn.TransformerEncoderLayer, "forward", "nn.TransformerEncoderLayer"),
    (torch.nn.TransformerDecoderLayer, "forward", "nn.TransformerDecoderLayer"),
]
# For exercises that ask for a softmax or a layer norm written by hand.
SOFTMAX = [
    (torch, "softmax", "torch.softmax"),
    (F, "softmax", "F.softmax"),
    (torch.Tensor, "softmax", "Tensor.softmax"),
    (torch.special, "softmax", "torch.special.softmax"),
    (torch.nn.Softmax, "forward", "nn.Softmax"),
    # log_softmax(x).exp() is the same softmax by another door
    (torch, "log_softmax", "torch.log_softmax"),
    (F, "log_softmax", "F.log_softmax"),
    (torch.Tensor, "log_softmax", "Tensor.log_softmax"),
    (torch.special, "log_softmax", "torch.special.log_softmax"),
    (torch.nn.LogSoftmax, "forward", "nn.LogSoftmax"),
]
LAYER_NORM = [
    (F, "layer_norm", "F.layer_norm"),
    (torch, "layer_norm", "torch.layer_norm"),
    (torch.nn.LayerNorm, "forward", "nn.LayerNorm"),
]
_MISSING = object()
# Names switched off right now (None outside forbidden_builtins): a grader running the student's
# code in another process sends them along with each call.
ACTIVE: list[str] | None = None


def by_names(names) -> list:
    """The (owner, attribute, name) entries for names that forbidden_builtins reported."""
    if names is None:
        return None
    wanted = set(names)
    return [entry for entry in [*ATTENTION, *SOFTMAX, *LAYER_NORM] if entry[2] in wanted]


def _blocked(name: str):
    def refuse(*args, **kwargs):
        raise CheckFailure(
            f"{name} is switched off while your code is graded: this exercise asks you to "
            "write it yourself from basic tensor operations.")
    return refuse


def switched(extra=(), attention: bool = True) -> list:
    """The built-ins to switch off: `extra`, after PyTorch's attention built-ins unless
    `attention` is False (for an exercise whose text allows them)."""
    return list(dict.fromkeys([*(ATTENTION if attention else ()), *extra]))


@contextlib.contextmanager
def announced(extra=(), attention: bool = True):
    """Within the block, a call to the student's process asks it to switch off PyTorch's
    attention built-ins (unless `attention` is False) and those in `extra`: for a call that runs
    none of the student's code here, the grader's own copies of them need no switching off."""
    global ACTIVE
    outer = ACTIVE
    ACTIVE = [name for _, _, name in switched(extra, attention)]
    try:
        yield
    finally:
        ACTIVE = outer


class Switch:
    """Built-ins switched off (`entries`: (owner, attribute, name)) and the names of a namespace
    bound to them, from `off()` until `restore()`.

    `cover(namespace)` may be called again while they are off: the student's process keeps one
    switch across the calls of a test that ask for the same built-ins off, instead of setting
    attributes of PyTorch's modules and classes off and back on at every call, and covers the
    notebook's names before each call, as a fresh switch would (bench/crossing.py)."""

    def __init__(self, entries):
        self.entries = list(entries)
        self.saved = []  # (owner, attribute, value before; _MISSING if the owner only inherited it)
        self.stand_ins = []  # (owner, attribute, what stands in for the built-in there)
        self.originals = {}  # id of a built-in: (the built-in, what stands in for it)

    def off(self) -> None:
        for owner, attr, name in self.entries:
            original = getattr(owner, attr)
            own = vars(owner).get(attr, _MISSING) if isinstance(owner, type) else original
            self.saved.append((owner, attr, own))
            stand_in = _blocked(name)
            setattr(owner, attr, stand_in)
            self.stand_ins.append((owner, attr, stand_in))
            self.originals.setdefault(id(original), (original, stand_in))

    def cover(self, namespace: dict) -> None:
        """Every name of `namespace` bound to a built-in that is off now holds its stand-in, and
        so does every attribute switched off (code run since may have bound them anew)."""
        for owner, attr, stand_in in self.stand_ins:
            if getattr(owner, attr, None) is not stand_in:
                setattr(owner, attr, stand_in)
        for owner, var, original in self.saved:
            if owner is namespace:  # covered before: a fresh switch would find it again
                namespace[var] = self.originals[id(original)][1]
        for var, value in list(namespace.items()):  # one pass, however many are off
            original, stand_in = self.originals.get(id(value), (None, None))
            if original is not None and value is original:
                self.saved.append((namespace, var, original))
                namespace[var] = stand_in

    def restore(self) -> None:
        for owner, attr, original in reversed(self.saved):
            if isinstance(owner, dict):
                owner[attr] = original
            elif original is _MISSING:
                with contextlib.suppress(AttributeError):  # the student's code deleted it
                    delattr(owner, attr)
            else:
                setattr(owner, attr, original)
        self.saved.clear()
        self.stand_ins.clear()


@contextlib.contextmanager
def forbidden_builtins(namespace: dict | None = None, extra=(), attention: bool = True):
    """Within the block, PyTorch's attention built-ins (unless `attention` is False) and those
    in `extra` raise a CheckFailure.

    Also replaces any name in `namespace` (default: the notebook's globals) bound directly to
    one of them, such as after `from torch.nn.functional import scaled_dot_product_attention`.
    """
    if namespace is None:
        namespace = vars(sys.modules["__main__"])
    # (the student's process is sent every name switched off)
    with announced(extra, attention):  # a call to the student's process switches them off too
        switch = Switch(switched(extra, attention))
        try:
            switch.off()
            switch.cover(namespace)
            yield
        finally:
            switch.restore()
