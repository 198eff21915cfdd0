"""The student's side: a confined process that runs their cells and answers the grader's calls.

It never decides anything. The grader asks it to run a cell, to hand over a name, or to call a
student's function on inputs the grader chose; it answers with plain data (see codec.py). Tests
and references stay in the grader's process.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import resource
import sys
import traceback

import torch

from grader.sandbox import codec, forbidden, keyrings, landlock
from grader.sandbox.codec import unchanged
from grader.sandbox.probe import probing
from grader.sandbox.proc import PR_SET_DUMPABLE, prctl

KEEP_OUTPUT = 20_000  # characters of a cell's printed output kept for the feedback


class CappedText(io.TextIOBase):
    """Printed output: keeps the first KEEP_OUTPUT characters and counts the rest."""

    def __init__(self):
        self.parts, self.kept, self.total = [], 0, 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        self.total += len(s)
        if self.kept < KEEP_OUTPUT:
            piece = s[: KEEP_OUTPUT - self.kept]
            self.parts.append(piece)
            self.kept += len(piece)
        return len(s)

    def text(self) -> str:
        out = "".join(self.parts)
        if self.total > self.kept:
            out += f"\n[... {self.total - self.kept} more characters of output not kept]\n"
        return out


@contextlib.contextmanager
def captured():
    out, err = CappedText(), CappedText()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved


def _error(e: BaseException) -> dict:
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if f.filename.startswith("<")]  # the student's cells
    lines = traceback.format_list(mine[-5:]) + traceback.format_exception_only(type(e), e)
    return {"ename": type(e).__name__, "evalue": str(e)[:2000], "traceback": lines}


class Worker:
    def __init__(self, conn, config: dict):
        self.conn, self.config = conn, config
        self.objects: dict[int, object] = {}  # reference number -> object
        self.numbers: dict[int, int] = {}  # id(object) -> reference number
        self.calls: dict[int, tuple] = {}  # call number -> (outputs, leaves) kept for backward
        self.numbered = itertools.count(1)  # call numbers, never reused
        self.shell = None
        self.confinement: dict = {}
        self.switched: tuple[tuple[str, ...], forbidden.Switch] | None = None  # built-ins off

    # ----- references -------------------------------------------------------------------
    def to_ref(self, obj) -> codec.Ref:
        n = self.numbers.get(id(obj))
        if n is None or self.objects.get(n) is not obj:
            n = len(self.objects) + 1
            self.objects[n], self.numbers[id(obj)] = obj, n
        try:
            text = repr(obj)[:200]
        except Exception:
            text = "?"
        return codec.Ref(n, type(obj).__name__, text)

    def from_ref(self, ref: codec.Ref):
        if ref.id not in self.objects:
            raise KeyError(f"no object number {ref.id} in this process")
        return self.objects[ref.id]

    def encode(self, value):
        return codec.encode(value, self.to_ref)

    # ----- operations -------------------------------------------------------------------
    def op_run(self, msg):
        ns = self.shell.user_ns
        before = {k: id(v) for k, v in ns.items()}
        with captured() as (out, err):
            result = self.shell.run_cell(msg["source"], store_history=False)
        error = result.error_before_exec or result.error_in_exec
        bound = [k for k, v in ns.items() if before.get(k) != id(v) and not k.startswith("_")]
        return {"stdout": out.text(), "stderr": err.text(),
                "error": _error(error) if error is not None else None, "bound": bound[:1000]}

    def op_get(self, msg):
        ns = self.shell.user_ns
        if msg["name"] not in ns:
            raise NameError(f"name '{msg['name']}' is not defined")
        return {"value": self.encode(ns[msg["name"]])}

    def op_get_many(self, msg):
        """The values of several names (a test cell's answers) in one answer: for each name,
        {"value": ...} or {"error": ...}, as `get` would have answered it alone."""
        values = {}
        for name in msg["names"]:
            try:
                values[name] = self.op_get({"name": name})
            except Exception as e:
                values[name] = {"error": _error(e)}
        return {"values": values}

    def op_getattr(self, msg):
        obj = self.from_ref(codec.decode(msg["ref"], lambda r: r))
        return {"value": self.encode(getattr(obj, msg["name"]))}

    def op_call(self, msg):
        leaves = []

        def decode(node):
            return codec.decode(node, self.from_ref)

        # The code gets copies of the tensors given as arguments (ordinary tensors of their
        # own) and the decoded ones are kept: afterwards, they tell whether it changed its
        # arguments in place.
        given, args = [], []
        for i, node in enumerate(msg["args"]):
            value = decode(node)
            copy = _copied(value)
            if copy is not value:
                given.append((i, value))
            args.append(self._leaf(copy, node, leaves))
        kwargs = {k: self._leaf(_copied(decode(v)), v, leaves) for k, v in msg["kwargs"].items()}
        fn = self.from_ref(codec.decode(msg["ref"], lambda r: r))
        # Every name the judge switched off, exactly; they stay off until an operation other
        # than a call (serve), so the value below is encoded with them off too (a student's
        # __repr__ that uses one gives its reference the text "?").
        self.switch_off(msg.get("forbidden"))
        with captured() as (out, err), probing(args, kwargs):  # probing: devices.py
            with torch.enable_grad() if leaves else torch.no_grad():
                value = fn(*args, **kwargs)
        changed = [i for i, before in given if not unchanged(before, args[i])]
        call = None
        if leaves and msg.get("keep", True):  # (kept for a backward pass, unless told not to)
            outputs = list(_tensors(value))  # in the order the grader sees them
            call = next(self.numbered)
            self.calls[call] = (outputs, leaves)
        return {"value": self.encode(value), "call": call, "changed": changed,
                "stdout": out.text(), "stderr": err.text()}

    def switch_off(self, names: list[str] | None) -> None:
        """PyTorch's built-ins `names` off (None: none off) for what runs next, and the
        notebook's names bound to them. Calls in a row that ask for the same ones keep one
        switch (forbidden.Switch), made again only when the names change; every other
        operation is served with all of them back on (serve)."""
        wanted = None if names is None else tuple(names)
        if self.switched is not None and self.switched[0] != wanted:
            self.switched[1].restore()
            self.switched = None
        if wanted is None:
            return
        if self.switched is None:
            switch = forbidden.Switch(forbidden.by_names(wanted))
            self.switched = (wanted, switch)
            switch.off()
        self.switched[1].cover(self.shell.user_ns)

    @staticmethod
    def _leaf(value, node, leaves):
        if isinstance(value, torch.Tensor) and isinstance(node, dict) and node.get("grad"):
            value.requires_grad_(True)
            leaves.append(value)
        return value

    def op_backward(self, msg):
        outputs, leaves = self.calls.pop(msg["call"])
        grads = [codec.decode(g, self.from_ref) for g in msg["grads"]]
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=False)
                 if g is not None and isinstance(o, torch.Tensor) and o.requires_grad]
        with captured():
            if pairs:
                torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return {"value": self.encode(tuple(leaf.grad for leaf in leaves))}

    def op_grads(self, msg):
        module = self.from_ref(codec.decode(msg["ref"], lambda r: r))
        return {"value": self.encode({n: p.grad for n, p in module.named_parameters()})}

    def op_ping(self, msg):
        return {"value": os.getpid(), "confinement": self.confinement, "kept": len(self.calls)}

    def op_files(self, msg):
        """Write the grader's files (the student's own, then the released ones) into scratch."""
        root = os.path.realpath(self.config["scratch"])
        for name, data in msg["files"]:
            path = os.path.realpath(os.path.join(root, name))
            if not path.startswith(root + os.sep):
                raise ValueError(f"file name {name!r} leaves the scratch folder")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)  # raw bytes (codec.py)
        return {"value": len(msg["files"]), "confinement": self.confinement}

    def serve(self):
        while True:
            try:
                data = self.conn.recv_bytes()
            except (EOFError, OSError):
                return
            msg = codec.loads(data)
            for call in msg.get("release") or ():  # calls the grader can no longer go back to
                if type(call) is int:
                    self.calls.pop(call, None)
            try:
                if msg["op"] != "call":  # (a call switches them as it asks: op_call)
                    self.switch_off(None)
                reply = getattr(self, "op_" + msg["op"])(msg)
                reply["ok"] = True
            except BaseException as e:  # noqa: B036 - reported to the grader, never hidden
                reply = {"ok": False, "error": _error(e)}
            try:
                payload = codec.dumps(reply)
            except Exception as e:
                payload = codec.dumps({"ok": False, "error": _error(e)})
            self.conn.send_bytes(payload)


def _copied(value):
    """A copy of a tensor that holds data (anything else as it is)."""
    if isinstance(value, torch.Tensor) and value.device.type != "meta":
        return codec.same_layout(value)  # (a transposed or sliced input stays one)
    return value


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def confine(config: dict) -> dict:
    """Limits and the second filesystem layer, applied before any student code runs. (The first
    layer, the sandbox's namespaces, was set up before this process's parent started.)"""
    report = {}
    os.setsid()  # its own session and process group
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # C-level prints must not reach the grader's terminal
        os.dup2(devnull, fd)
    if not config.get("keyrings_blocked"):  # no seccomp filter (keyrings.py): a session
        with contextlib.suppress(OSError):  # keyring of its own, not the server's shared one
            keyrings.join_fresh_session()
    with contextlib.suppress(OSError):
        prctl(PR_SET_DUMPABLE, 1)  # its own children may inspect it (the zygote stays closed)
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, config["max_file_bytes"])]
    if config.get("memory_bytes"):
        limits.append((resource.RLIMIT_AS, config["memory_bytes"]))
    if config.get("max_processes"):
        limits.append((resource.RLIMIT_NPROC, config["max_processes"]))
    for which, value in limits:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))
    scratch = config["scratch"]
    os.chdir(scratch)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", scratch)]
    sys.path.insert(0, scratch)
    if config.get("landlock", True):
        try:
            report["landlock"] = landlock.restrict(read=config["read"],
                                                   write=[scratch, *config["write"]])
        except OSError as e:
            report["landlock_error"] = str(e)
    return report


def shell():
    """The IPython shell every worker runs cells in, made here once (a fifth of a second each
    time otherwise) and never used here: each fork gets a fresh copy. No history database: a
    file shared by forked copies would be corrupted."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    return InteractiveShell.instance(config=config)


def main(conn, config: dict) -> None:
    """Entry point of the forked process (see session.py)."""
    confinement = confine(config)
    worker = Worker(conn, config)
    worker.confinement = confinement
    worker.shell = shell()  # the zygote's, copied by the fork: user_ns as clean as it was there
    worker.shell.showtraceback = lambda *a, **k: None  # errors are reported as data instead
    worker.serve()
    os._exit(0)
