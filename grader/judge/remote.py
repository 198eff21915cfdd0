"""The grader's handles on the student's objects: functions, classes and modules.

A test written for a notebook (`out, att = scaled_dot_product_attention(q, k, v)`) runs unchanged
in the grader's process: the name is bound to a `Remote`, calling it sends the inputs to the
student's process and brings back plain tensors. Gradients cross too: backward() through a
remote call asks the student's process for the gradients of its inputs.
"""

from __future__ import annotations

import weakref

import torch

from grader.failure import CheckFailure
from grader.sandbox import codec, forbidden

# Exceptions from the student's code are re-raised here as the built-in type of the same name
# (so a test may catch RuntimeError), otherwise as StudentError. Never anything else.
_BUILTIN_ERRORS = {e.__name__: e for e in (
    ArithmeticError, AssertionError, AttributeError, IndexError, KeyError, LookupError,
    NameError, NotImplementedError, OverflowError, RuntimeError, TypeError, ValueError,
    ZeroDivisionError, MemoryError, RecursionError)}


class StudentError(Exception):
    """An exception of a type the grader does not recreate (the student's own class, say)."""


def remote_exception(ename: str, evalue: str) -> Exception:
    """The grader's exception for an error the student's process reported."""
    cls = _BUILTIN_ERRORS.get(ename, StudentError)
    return cls(evalue if cls is not StudentError else f"{ename}: {evalue}")


def raise_remote(error) -> None:
    raise remote_exception(error.ename, error.evalue)


class Remote:
    """An object in the student's process. Call it, read its attributes; nothing else."""

    __slots__ = ("_link", "_ref")

    def __init__(self, link, ref: codec.Ref):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_ref", ref)

    def __repr__(self):
        return f"<student's {self._ref.type}: {self._ref.repr}>"

    def __call__(self, *args, **kwargs):
        return self._link.call(self, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._link.getattr(self, name)

    def __setattr__(self, name, value):
        raise TypeError("the grader does not change the student's objects")

    def __bool__(self):
        raise CheckFailure(f"expected a tensor or a number, got the student's {self._ref.type}")

    def __iter__(self):
        raise CheckFailure(f"expected a tensor or a tuple, got the student's {self._ref.type}")

    def __len__(self):
        raise CheckFailure(f"expected a tensor or a tuple, got the student's {self._ref.type}")

    def __getitem__(self, key):
        raise CheckFailure(f"expected a tensor or a tuple, got the student's {self._ref.type}")

    __hash__ = object.__hash__


class _Bridge(torch.autograd.Function):
    """A remote call as one autograd node: backward asks the student's process for gradients."""

    @staticmethod
    def forward(ctx, link, call, *leaves):
        outputs, call_id = call()
        ctx.link, ctx.call_id, ctx.n_leaves = link, call_id, len(leaves)
        if call_id is not None:  # once nothing can reach this node, neither can a backward
            weakref.finalize(ctx, link.released.append, call_id)
        ctx.mark_non_differentiable(*[o for o in outputs if not o.is_floating_point()])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.call_id is None:
            return (None, None, *[None] * ctx.n_leaves)
        leaf_grads = ctx.link.backward(ctx.call_id, grads)
        if len(leaf_grads) != ctx.n_leaves:
            raise CheckFailure("the student's process returned the wrong number of gradients")
        return (None, None, *leaf_grads)


def _tensor_slots(tree, path=()):
    """Where the tensors are in a decoded value: list of paths."""
    if isinstance(tree, torch.Tensor):
        return [path]
    if isinstance(tree, (tuple, list)):
        return [p for i, v in enumerate(tree) for p in _tensor_slots(v, (*path, i))]
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _tensor_slots(v, (*path, k))]
    return []


def _get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _put(tree, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _put(tree[head], rest, value)}
    items = list(tree)
    items[head] = _put(items[head], rest, value)
    return type(tree)(items) if isinstance(tree, tuple) else items


def call_reporting_changes(fn: Remote, args) -> tuple:
    """fn(*args) in the student's process: (its value, detached, and the positions of the
    arguments that it changed in place there)."""
    changed = []
    value = fn._link.call(fn, args, {}, changed, detached=True)
    return value, changed


class Link:
    """The grader's end of a student's process: encodes calls, decodes answers."""

    def __init__(self, session, on_output=None):
        self.session = session
        self.on_output = on_output or (lambda stdout, stderr: None)
        # Calls whose autograd nodes are gone: the student's process keeps each one's outputs
        # and inputs for a backward pass until told, with the next request, that none can come.
        self.released: list[int] = []

    def remote(self, ref: codec.Ref) -> Remote:
        return Remote(self, ref)

    def decode(self, node):
        return codec.decode(node, self.remote)

    def _encode(self, value, leaves):
        def to_ref(obj):
            if isinstance(obj, Remote):
                if obj._link is not self:
                    raise CheckFailure("an object from an earlier run of the notebook was used")
                return obj._ref
            raise CheckFailure(f"cannot send a {type(obj).__name__} to the student's code")

        node = codec.encode(value, to_ref)
        if isinstance(value, torch.Tensor) and value.requires_grad and torch.is_grad_enabled():
            node["grad"] = True
            leaves.append(value)
        return node

    def request(self, message):
        if self.released:  # (a finalizer may add to it meanwhile: only what was read goes)
            n = len(self.released)
            message["release"] = self.released[:n]
            del self.released[:n]
        try:
            return self.session.request(message)
        except Exception as e:
            from grader.sandbox.session import RemoteError

            if isinstance(e, RemoteError):
                raise_remote(e)
            raise

    def get(self, name: str):
        return self.decode(self.request({"op": "get", "name": name})["value"])

    def get_many(self, names: list[str]) -> dict:
        """{name: its value, or the exception `get(name)` would raise}, in one request; a name
        the answer leaves out, or one whole answer that fails (too large for one message, say),
        is asked for alone, so each name ends as `get` would have left it."""
        from grader.sandbox.session import WorkerDied

        try:
            values = self.request({"op": "get_many", "names": names}).get("values")
        except WorkerDied:
            raise
        except Exception:  # what the student's process reported: each name alone, below
            values = None
        found = {}
        for name in names:
            node = values.get(name) if isinstance(values, dict) else None
            try:
                if not isinstance(node, dict) or not ("value" in node or "error" in node):
                    found[name] = self.get(name)
                elif "value" in node:
                    found[name] = self.decode(node["value"])
                else:
                    error = node["error"] if isinstance(node["error"], dict) else {}
                    found[name] = remote_exception(str(error.get("ename", "Error"))[:100],
                                                   str(error.get("evalue", ""))[:2000])
            except WorkerDied:
                raise
            except Exception as e:
                found[name] = e
        return found

    def getattr(self, obj: Remote, name: str):
        reply = self.request({"op": "getattr", "ref": self._ref_node(obj), "name": name})
        return self.decode(reply["value"])

    @staticmethod
    def _ref_node(obj: Remote) -> dict:
        return {"T": "ref", "id": obj._ref.id, "type": obj._ref.type, "repr": ""}

    def call(self, fn: Remote, args, kwargs, changed: list | None = None,
             detached: bool = False):
        """fn(*args, **kwargs) in the student's process; `changed`, if given, receives the
        positions of the arguments that the call changed in place there. detached: the caller
        takes no gradient through the value (it detaches it), so the call is no autograd node
        here and the student's process keeps nothing of it for a backward pass; inputs that
        require gradients still do there, where a change in place to one is an error."""
        leaves = []
        message = {"op": "call", "ref": self._ref_node(fn),
                   "args": [self._encode(a, leaves) for a in args],
                   "kwargs": {str(k): self._encode(v, leaves) for k, v in kwargs.items()},
                   "forbidden": forbidden.ACTIVE}
        if detached:
            message["keep"] = False
        result = {}

        def send():
            reply = self.request(message)
            self.on_output(reply.get("stdout", ""), reply.get("stderr", ""))
            if changed is not None:  # what the student's process says, checked to be positions
                said = reply.get("changed")
                changed[:] = [i for i in (said if isinstance(said, list) else [])
                              if type(i) is int and 0 <= i < len(args)]
            value = self.decode(reply["value"])
            result["value"], result["slots"] = value, _tensor_slots(value)
            return [_get(value, p) for p in result["slots"]], reply.get("call")

        if not leaves or detached:
            send()
            return result["value"]
        outputs = _Bridge.apply(self, send, *leaves)
        value = result["value"]
        for path, out in zip(result["slots"], outputs, strict=True):
            value = _put(value, path, out)
        return value

    def backward(self, call_id: int, grads) -> list:
        message = {"op": "backward", "call": call_id,
                   "grads": [None if g is None else codec.encode_tensor(g) for g in grads]}
        values = self.decode(self.request(message)["value"])
        return [v if isinstance(v, torch.Tensor) else None for v in values]

    def parameter_grads(self, module: Remote) -> dict:
        return self.decode(self.request({"op": "grads", "ref": self._ref_node(module)})["value"])
