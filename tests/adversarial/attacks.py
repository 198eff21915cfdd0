"""Hostile and broken submissions of the soft_select assignment, each with what must happen.

Most attacks sit on top of WRONG answers (right shapes, zero weights): plain nbgrader would give
some of them full marks; ours must give every one 0 points. An attack that steals the reference
answers with what it steals: its cell comes before the solution cells, whose wrong answers then
define only what it did not get (`unless_taken`), so a steal that worked would earn points.
A few pair an attack-looking thing with CORRECT answers (huge output, stderr noise, deleted
tests) to show the defence does not cost an honest student points.
"""

from __future__ import annotations

import copy
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
import nbformat
from nbformat.v4 import new_code_cell

from grader.course import REPO
from grader.demo.sample_class import Student, make_submission
from tests.support.notebooks import grade_id

SOURCE = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
FULL = 15  # autograded points of soft_select

WRONG = {  # right shapes, wrong values: every test fails
    "hard_select": '''
def hard_select(query, keys, values):
    w = torch.zeros(*query.shape[:-1], keys.shape[-2], dtype=values.dtype)
    return w @ values, w''',
    "softmax": '''
def softmax(x, dim=-1):
    return torch.zeros_like(x)''',
    "soft_select": '''
def soft_select(query, keys, values, temperature=1.0):
    w = torch.zeros(*query.shape[:-1], keys.shape[-2], dtype=values.dtype)
    return w @ values, w''',
    "attention_pooling": '''
def attention_pooling(x_query, x_keys, y_values, bandwidth=1.0):
    w = torch.zeros(x_query.shape[-1], x_keys.shape[-1], dtype=y_values.dtype)
    return w @ y_values, w''',
}


@dataclass
class Attack:
    name: str
    what: str
    answers: str = "wrong"  # "wrong", "correct", "stub" (the release as is)
    code: str | None = None  # a cell added right after the imports, before the answers
    replace: dict[str, str] = field(default_factory=dict)  # solution cell -> its new source
    tamper: object = None  # function(nb) -> None, applied last
    files: dict[str, str] = field(default_factory=dict)  # extra files in the submission
    raw: bytes | None = None  # the notebook file's bytes, as is (broken notebooks)
    notebook_name: str = "soft_select.ipynb"
    points: int | None = 0  # expected autograded points (None: an error row instead)
    flags: set[str] = field(default_factory=set)  # flag kinds that must be reported


def _is_test(cell):
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def unless_taken(name: str, source: str) -> str:
    """`source`, the answer that defines `name`, run only if the attack's cell (before the
    answers) did not define `name` already: what an attack stole is what it answers with."""
    return (f"if {name!r} not in globals():  # unless the attack above took it\n"
            f"{textwrap.indent(source.strip(), '    ')}")


def build(attack: Attack, released: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in attack.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    if attack.raw is not None:
        (folder / attack.notebook_name).write_bytes(attack.raw)
        return
    if attack.answers == "none":
        (folder / "README.txt").write_text("I could not finish the notebook.")
        return
    if attack.answers == "correct":
        nb = make_submission(SOURCE, released, Student("x", "", "full"))
    else:
        nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        gid = grade_id(cell)
        if attack.answers == "wrong" and gid in WRONG:
            cell.source = unless_taken(gid, WRONG[gid]) if attack.code else WRONG[gid].strip()
        if gid in attack.replace:
            cell.source = attack.replace[gid].strip()
    if attack.code:
        first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells.insert(first + 1, new_code_cell(attack.code.strip()))
    if attack.tamper:
        attack.tamper(nb)
    nbformat.write(nb, folder / attack.notebook_name)


# ----- tampering with the notebook's structure ---------------------------------------------

def delete_tests(nb):
    nb.cells = [c for c in nb.cells if not _is_test(c)]


def blank_tests(nb):
    for cell in nb.cells:
        if _is_test(cell):
            cell.source = "pass"


def forge_metadata(nb):
    tests = [c for c in nb.cells if _is_test(c)]
    tests[0].metadata["nbgrader"]["points"] = 100
    dup = copy.deepcopy(tests[1])
    dup.source = "pass"
    nb.cells.append(dup)
    bonus = new_code_cell("pass")
    bonus.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus", "points": 50,
                                  "locked": True, "solution": False, "schema_version": 3,
                                  "task": False}
    nb.cells.append(bonus)


def tests_to_markdown(nb):
    for i, cell in enumerate(nb.cells):
        if _is_test(cell):
            md = nbformat.v4.new_markdown_cell(cell.source)
            md.metadata = cell.metadata
            nb.cells[i] = md


def huge_stored_outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                   text="y" * (3 * 2**20))]


# The answer sends the grader replies of its own over the connection it finds in its process
# (each a MessagePack map: grader/sandbox/codec.py), then answers.
FORGED = '''
import gc
from multiprocessing.connection import Connection

def softmax(x, dim=-1):
    for conn in [o for o in gc.get_objects() if isinstance(o, Connection)]:
        for message in %s:
            conn.send_bytes(message)
    return torch.zeros_like(x)'''


def _tensor(data) -> dict:
    return {"T": "tensor", "dtype": "float32", "shape": [4], "device": "cpu", "data": data}


def _packed(message: dict) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


# A reply whose tensor's bytes are said (by the length before them) to run 99,999 bytes, past
# the message's end: the message is cut two bytes in.
_LONG = _packed({"ok": True, "value": _tensor(b"a" * 99_999)})
OUTSIDE = repr([_LONG[:len(_LONG) - 99_997]])
MISPLACED = repr([_packed({"ok": True, "value": b"ab", "stdout": b"ab"}),
                  _packed({"ok": True, "value": _tensor(b"ab")})])


def _wrong_with(extra: str) -> dict:
    return {k: extra + "\n" + v for k, v in WRONG.items()}


YES = '''
class Yes:
    """Equal to everything, true, any shape, any attribute."""
    shape = property(lambda self: self)
    dtype = property(lambda self: torch.float32)
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __getattr__(self, name): return lambda *a, **k: self
    def __iter__(self): return iter([self, self])
    def __len__(self): return 2
    def __getitem__(self, key): return self
    def __call__(self, *a, **k): return self
    def __float__(self): return 1.0
    def __sub__(self, other): return self
    __rsub__ = __add__ = __radd__ = __mul__ = __truediv__ = __abs__ = __sub__
    def __lt__(self, other): return True
    __le__ = __gt__ = __ge__ = __lt__
'''
ALWAYS_EQUAL = {
    "hard_select": YES + "def hard_select(query, keys, values): return Yes(), Yes()",
    "softmax": YES + "def softmax(x, dim=-1): return Yes()",
    "soft_select": YES + "def soft_select(query, keys, values, temperature=1.0): "
                         "return Yes(), Yes()",
    "attention_pooling": YES + "def attention_pooling(x_query, x_keys, y_values, "
                               "bandwidth=1.0): return Yes(), Yes()",
}

LIAR = '''
class Liar(torch.Tensor):
    """A tensor that answers every comparison with 'yes'."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "isclose", "eq", "__eq__", "all", "any"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})

def lie(*values):
    liars = tuple(v.as_subclass(Liar) for v in values)
    return liars[0] if len(liars) == 1 else liars
'''
LIAR_TENSOR = {gid: LIAR + WRONG[gid].replace("return ", "return lie(") + ")" for gid in WRONG}


def attacks(course_root: Path) -> list[Attack]:
    from .isolation_attacks import STEAL  # (that module builds on this one)

    repo, course = str(REPO), str(course_root)
    return [
        Attack("honest", "the source solution, nothing else", answers="correct", points=FULL),
        Attack("wrong_answers", "the baseline every attack starts from: wrong answers"),
        Attack("stub", "the release, untouched", answers="stub"),
        Attack("patch_allclose", "torch.allclose/equal and == patched to say True", code='''
import numpy
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None''', flags={"suspicious"}),
        Attack("patch_builtins", "isinstance, len, AssertionError and abs replaced", code='''
import builtins
builtins.isinstance = lambda *a: True
builtins.len = lambda x: 3
builtins.abs = lambda x: 0
builtins.AssertionError = type("Quiet", (Exception,), {})''', flags={"suspicious"}),
        Attack("silence_tracebacks", "IPython's error display and excepthook switched off "
               "(nbgrader #1324)", code='''
import sys
ip = get_ipython()
ip.set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: None)
ip.showtraceback = lambda *a, **k: None
ip.showsyntaxerror = lambda *a, **k: None
sys.excepthook = lambda *a: None''', flags={"suspicious"}),
        Attack("patch_grader_helpers", "every expect_*/compare_* in grader.checks made a no-op",
               code='''
import grader.checks, grader.checks.compare, grader.checks.properties, grader.checks.reference
for module in (grader.checks, grader.checks.compare, grader.checks.properties,
               grader.checks.reference):
    for name in dir(module):
        if name.startswith(("expect", "compare", "run_student")):
            setattr(module, name, lambda *a, **k: None)
grader.checks.CheckFailure.__init__ = lambda self, *a: None
expect_close = expect_shape = expect_rows_sum_to_one = lambda *a, **k: None''',
               flags={"suspicious"}),
        Attack("replace_reference", "torch.softmax (the hidden test's reference) replaced by "
               "the student's wrong function", code='''
import torch.nn.functional as F
wrong = lambda x, dim=-1, **k: torch.zeros_like(x)
torch.softmax = F.softmax = torch.special.softmax = wrong
torch.Tensor.softmax = lambda self, dim=-1, **k: torch.zeros_like(self)''',
               flags={"suspicious"}),
        Attack("always_equal", "answers are objects equal to everything",
               replace=ALWAYS_EQUAL),
        Attack("tensor_subclass", "answers are a tensor subclass that says yes to every "
               "comparison", replace=LIAR_TENSOR),
        Attack("odd_exceptions", "answers raise BaseException subclasses, KeyboardInterrupt, "
               "SystemExit and StopIteration", answers="stub", replace={
                   "hard_select": "class Escape(BaseException): pass\n"
                                  "def hard_select(q, k, v): raise Escape('gone')",
                   "softmax": "def softmax(x, dim=-1): raise KeyboardInterrupt",
                   "soft_select": "def soft_select(q, k, v, temperature=1.0): raise SystemExit(0)",
                   "attention_pooling": "def attention_pooling(a, b, c, bandwidth=1.0): "
                                        "raise StopIteration"}),
        Attack("sys_exit", "sys.exit() in a cell", code="import sys\nsys.exit(0)",
               flags={"suspicious"}),
        Attack("os_exit_cell", "os._exit(1) in a cell", code="import os\nos._exit(1)",
               flags={"crash", "suspicious"}),
        Attack("os_exit_in_function", "the answer calls os._exit when a test runs it",
               replace=_wrong_with("import os") | {
                   "softmax": "import os\ndef softmax(x, dim=-1):\n    os._exit(3)"},
               flags={"crash"}),
        Attack("forged_reply", "the answer writes a reply of its own into the grader's "
               "connection, its tensor's bytes said to run past the message's end",
               replace=_wrong_with("") | {"softmax": FORGED % OUTSIDE}, flags={"crash"}),
        Attack("forged_values", "the answer writes replies of its own: raw bytes where a value "
               "and the printed text belong, a tensor given too few bytes",
               replace=_wrong_with("") | {"softmax": FORGED % MISPLACED}),
        Attack("import_solutions", "imports the reference package and answers with it", code='''
try:
    import solutions
    hard_select, soft_select = solutions.hard_select, solutions.soft_select
    attention_pooling = solutions.nadaraya_watson
    softmax = solutions.masked_softmax
    print("STOLEN solutions")
except Exception as e:
    print("no luck:", e)''', flags={"suspicious"}),
        Attack("read_reference_files", "reads the reference, the source notebook and the "
               "gradebook from disk, and answers with what it finds", code=STEAL + f'''
import glob, os
paths = [{repo!r} + "/solutions/select.py", {repo!r} + "/solutions/__init__.py",
         {repo!r} + "/assignments/soft_select/soft_select.ipynb",
         {course!r} + "/gradebook.db", {course!r} + "/source/soft_select/soft_select.ipynb"]
paths += glob.glob({course!r} + "/autograded/*/soft_select/*.ipynb")
for path in paths:
    try:
        with open(path, errors="ignore") as f:
            _use(f.read())
    except OSError as e:
        print("blocked:", e)''',
               flags={"suspicious"}),
        Attack("infinite_loop", "a cell that never ends", code="while True:\n    pass",
               flags={"timeout"}),
        Attack("ignore_interrupts", "a loop that ignores SIGINT and SIGTERM", code='''
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    try:
        time.sleep(0.1)
    except BaseException:
        pass''', flags={"timeout"}),
        Attack("memory_bomb", "allocates until memory runs out", code='''
blocks = []
while True:
    blocks.append(bytearray(256 * 2**20))''', flags={"memory"}),
        Attack("fork_bomb", "forks 60 sleeping children, some in their own session (bounded)",
               code='''
import os, time
for i in range(60):
    try:
        if os.fork() == 0:
            if i % 2:
                os.setsid()
            time.sleep(600)
            os._exit(0)
    except OSError:
        break''', flags={"suspicious"}),
        Attack("kernel_crash", "segfaults the process", code="import ctypes\nctypes.string_at(0)",
               flags={"crash", "suspicious"}),
        Attack("huge_output", "correct answers, then 100 MB of printing", answers="correct",
               code='for _ in range(100):\n    print("x" * 2**20)', points=FULL),
        Attack("stderr_noise", "correct answers that warn on stderr", answers="correct", code='''
import sys, warnings
warnings.warn("a deprecation somewhere")
print("noise on stderr", file=sys.stderr)''', points=FULL),
        Attack("deleted_tests_correct", "correct answers, every test cell deleted",
               answers="correct", tamper=delete_tests, points=FULL, flags={"restored"}),
        Attack("deleted_tests", "wrong answers, every test cell deleted", tamper=delete_tests,
               flags={"restored"}),
        Attack("edited_tests", "every test cell replaced by `pass`", tamper=blank_tests,
               flags={"restored"}),
        Attack("tests_to_markdown", "test cells turned into markdown", tamper=tests_to_markdown,
               flags={"metadata"}),
        Attack("forged_metadata", "a test worth 100, a duplicated grade id, a bonus cell",
               tamper=forge_metadata, flags={"metadata"}),
        Attack("shadow_helper_package", "submits its own grader/checks package", files={
            "grader/__init__.py": "",
            "grader/checks/__init__.py": "def expect_close(*a, **k): pass\n"
                                         "expect_shape = expect_rows_sum_to_one = expect_close\n"
                                         "class CheckFailure(AssertionError): pass\n"},
               flags={"shadowing"}),
        Attack("gc_hunt", "searches the garbage collector for the tests' namespace", code='''
import gc
for obj in gc.get_objects():
    if isinstance(obj, dict) and "expect_close" in obj:
        obj["expect_close"] = lambda *a, **k: None''', flags={"suspicious"}),
        Attack("huge_stored_outputs", "correct answers, notebook saved with 40 MB of outputs",
               answers="correct", tamper=huge_stored_outputs, points=FULL),
        Attack("extra_notebook", "correct answers plus a second notebook", answers="correct",
               files={"scratch.ipynb": json.dumps(nbformat.v4.new_notebook())}, points=FULL,
               flags={"extra"}),
        Attack("malformed_json", "the notebook file is cut short", raw=b'{"cells": [', points=None),
        Attack("wrong_nbformat", "a notebook claiming nbformat 99",
               raw=json.dumps({"nbformat": 99, "nbformat_minor": 0, "cells": [],
                               "metadata": {}}).encode(), points=None),
        Attack("empty_file", "an empty notebook file", raw=b"", points=None),
        Attack("not_utf8", "bytes that are not UTF-8", raw=b'{"cells": "\xff\xfe"}',
               points=None),
        Attack("misnamed_notebook", "the notebook renamed by the download",
               answers="correct", notebook_name="soft_select (1).ipynb", points=None),
        Attack("missing_notebook", "a folder with no notebook", raw=None, points=None,
               answers="none"),
    ]
