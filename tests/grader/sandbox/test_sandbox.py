"""The sandbox's parts on their own: the data format, the code scan, Landlock, the worker."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import msgpack
import pytest
import torch

from grader.course import REPO
from grader.judge.remote import Link, Remote, StudentError
from grader.judge.scan import scan
from grader.sandbox import codec, landlock, namespaces
from grader.sandbox.session import Session, WorkerDied
from grader.submission import Limits


def roundtrip(value):
    refs = []
    node = codec.encode(value, lambda obj: refs.append(obj) or codec.Ref(len(refs), "X", ""))
    return codec.decode(codec.loads(codec.dumps({"v": node}))["v"], lambda r: ("ref", r.id))


def test_values_survive_the_trip():
    t = torch.randn(2, 3, dtype=torch.float64)
    out = roundtrip((t, {"a": [1, 2.5, None]}, torch.float32, torch.tensor([True, False])))
    assert torch.equal(out[0], t) and out[0].dtype == torch.float64
    assert out[1] == {"a": [1, 2.5, None]} and out[2] is torch.float32
    assert out[3].dtype == torch.bool
    meta = roundtrip(torch.empty(2, 2, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (2, 2)
    assert roundtrip(float("nan")) != roundtrip(float("nan"))  # NaN, not an error


@pytest.mark.parametrize("make", [
    lambda: torch.randn(3, 4).t(),  # strides of a transpose
    lambda: torch.randn(5, dtype=torch.float64).expand(3, 5),  # a stride of 0
    lambda: torch.arange(12)[::3],  # a step
    lambda: torch.randn(2, 3, dtype=torch.complex64).conj(),  # the conjugate bit
    lambda: torch.randn(2, 3, dtype=torch.complex128).conj().imag,  # the negative bit
    lambda: torch.randn(2, 3).to(torch.bfloat16),  # no numpy dtype
    lambda: torch.randn(2, 2, dtype=torch.float16).t(),
    lambda: torch.tensor([[True, False], [False, True]]).t(),
    lambda: torch.tensor(2.5),  # no dimension
    lambda: torch.randn(3, requires_grad=True) * 2,
    lambda: torch.nn.Parameter(torch.randn(2, 2)),
    lambda: torch.randint(-100, 100, (2, 3), dtype=torch.int16),
])
def test_a_tensor_arrives_with_its_exact_values_whatever_its_layout(make):
    """The bytes of any tensor go in row-major order, whatever its strides or view bits, and
    come back as a plain tensor of its own that can be written to."""
    t = make()
    out = roundtrip(t)
    assert type(out) is torch.Tensor and out.dtype == t.dtype and out.shape == t.shape
    assert torch.equal(out, t.detach().resolve_conj().resolve_neg())
    assert not out.requires_grad and not out.is_conj() and not out.is_neg()
    out.zero_()  # its own memory
    assert torch.equal(roundtrip(t), t.detach().resolve_conj().resolve_neg())


@pytest.mark.parametrize("make", [
    lambda: torch.randn(4, 6, dtype=torch.float64).T,  # transposed
    lambda: torch.randn(4, 6)[:, ::2],  # a step
    lambda: torch.randn(4, 6)[:, 1],  # a column
    lambda: torch.randn(2, 3, 4).transpose(0, 2),
    lambda: torch.randn(5, 5).to(torch.bfloat16)[::2, ::3],
])
def test_a_non_contiguous_view_arrives_with_its_layout(make):
    """A test that hands the student's code a transposed or sliced input must reach it as such
    (code that assumes a layout, `.view` on a transposed input, fails there as it would in the
    student's kernel): the strides travel with the part of the buffer they span."""
    t = make()
    out = roundtrip(t)
    assert out.stride() == t.stride() and not out.is_contiguous() and torch.equal(out, t)
    out.zero_()  # its own memory
    assert torch.equal(roundtrip(t), t)
    copy = codec.same_layout(t)  # what a call hands over: a copy, laid out the same
    assert copy.stride() == t.stride() and torch.equal(copy, t)


@pytest.mark.parametrize("stride, data", [
    ([0, 1], 8 * 4),  # entries sharing memory: a few bytes would become many entries
    ([1, 1], 8 * 5),  # overlapping rows
    ([4, 1], 8 * 3),  # fewer bytes than the strides need
    ([4, -1], 8 * 16),  # a negative stride
    ([4], 8 * 16),  # one stride for two dimensions
    ([4, 1.5], 8 * 16),
])
def test_strides_that_overlap_or_do_not_fit_their_bytes_are_refused(stride, data):
    node = {"T": "tensor", "dtype": "float64", "shape": [4, 4], "device": "cpu",
            "data": b"\0" * data, "stride": stride}
    with pytest.raises(codec.CodecError):
        codec.decode(codec.loads(_packed({"v": node}))["v"], None)


def test_a_tensor_subclass_arrives_as_a_plain_tensor():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    out = roundtrip(torch.zeros(3).as_subclass(Liar))
    assert type(out) is torch.Tensor
    assert not torch.equal(out, torch.ones(3))


def test_objects_that_are_not_data_become_references():
    class Yes:
        def __eq__(self, other):
            return True

    assert roundtrip(Yes()) == ("ref", 1)


def _packed(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


_TENSOR = {"T": "tensor", "dtype": "uint8", "shape": [2], "device": "cpu", "data": b"ab"}


@pytest.mark.parametrize("bad", [
    b"not a message", _packed([1, 2]), _packed({"v": 1}) + b"\x01",  # not one map alone
    _packed({"v": {**_TENSOR, "dtype": "float32", "shape": [4]}}),  # 2 bytes for 16
    _packed({"v": {**_TENSOR, "dtype": "object"}}),
    _packed({"v": {"T": "pickle", "data": b"\x80\x04"}}),
    _packed({"v": {**_TENSOR, "data": "YWI="}}),  # base64 text is not raw bytes
    _packed({"v": {**_TENSOR, "data": [97, 98]}}),
    _packed({"v": b"ab"}),  # raw bytes where a value should be
    _packed({"v": msgpack.ExtType(1, b"ab")}),  # an extension type
    _packed({1: "v"}), _packed({"v": {"T": "dict", "v": {2: 1}}}),  # a key that is not a string
    _packed({"v": "x"})[:-1],  # cut short
    _packed({"v": "x" * 100})[:7],  # a length that lies past the message's end
    b"\x81\xa1v\xa2\xff\xfe",  # text that is not UTF-8
    b"\x81\xa1v" + b"\x91" * 100_000 + b"\xc0",  # nested past msgpack's stack
])
def test_malformed_messages_are_refused(bad):
    with pytest.raises(codec.CodecError):
        codec.decode(codec.loads(bad)["v"], lambda r: r)
    assert codec.decode(codec.loads(_packed({"v": _TENSOR}))["v"], None).tolist() == [97, 98]


def test_tensor_bytes_travel_raw_and_text_as_it_was():
    """A tensor's bytes travel as they are (no base64 to encode, decode and scan on each side);
    a timestamp is read as a number, a lone surrogate (printed by a student) arrives as it
    was printed, and a dict that uses the key "data" itself arrives as it was."""
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    data = codec.dumps({"v": codec.encode(t, None)})
    assert t.numpy().tobytes() in data and b"AAAA" not in data  # (0.0 in base64 is AAAA...)
    assert torch.equal(roundtrip(t), t)
    assert roundtrip(torch.empty(0, 3)).shape == (0, 3)
    assert roundtrip({"data": [0, 4], "x": {"B": 1}}) == {"data": [0, 4], "x": {"B": 1}}
    assert roundtrip([t, t + 1])[1][1, 2] == 6.0
    assert roundtrip("it said \udcff") == "it said \udcff"
    assert codec.loads(_packed({"v": msgpack.Timestamp(5, 0)}))["v"] == 5.0


def test_scan_names_what_an_instructor_should_see():
    found = scan("import solutions\ntorch.allclose = lambda *a: True\nimport os\nos._exit(1)")
    assert "imports the reference solutions" in found
    assert "replaces torch.allclose" in found
    assert any("os._exit" in f for f in found)
    assert scan("def softmax(x):\n    return x.exp() / x.exp().sum()") == []


@pytest.mark.skipif(landlock.abi_version() < 1, reason="this kernel has no Landlock")
def test_landlock_hides_the_reference_from_a_child():
    scratch = tempfile.mkdtemp()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        try:
            landlock.restrict(read=["/usr", "/lib"], write=[scratch])
            try:
                open(REPO / "solutions" / "__init__.py").read()
                os._exit(1)
            except PermissionError:
                pass
            Path(scratch, "ok").write_text("writable")
            os._exit(0)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert Path(scratch, "ok").read_text() == "writable"


@pytest.fixture
def session():
    s = Session({}, Limits(cell_timeout=5, notebook_timeout=60))
    s.start()
    yield s
    s.close()


def test_a_student_function_runs_in_the_worker_and_returns_data(session):
    reply = session.request({"op": "run", "source":
                             "import torch, os\ndef f(x):\n    return 2 * x, os.getpid()"})
    assert "f" in reply["bound"] and reply["error"] is None
    link = Link(session)
    f = link.get("f")
    assert isinstance(f, Remote)
    y, pid = f(torch.arange(3.0))
    assert torch.equal(y, torch.tensor([0.0, 2.0, 4.0]))
    assert pid != os.getpid(), "the student's code ran in the grader's process"


@pytest.mark.parametrize("typed", [
    "[[Fr(1, 2), Fr(1, 3)], [Fr(2, 3), Fr(1, 4)]]",  # a list of Fractions
    "np.array([[Fr(1, 2), Fr(1, 3)], [Fr(2, 3), Fr(1, 4)]])",  # numpy: an array of objects
    "np.array([[D('0.5'), Fr(1, 3)], [D('0.6666666666666666'), 0.25]], dtype=object)",
    "np.array([[0.5, 1/3], [2/3, 0.25]], dtype=np.float32)",
    "[[np.float64(0.5), np.int64(1) / 3], [Fr(2, 3), np.float16(0.25)]]",
])
def test_every_typed_in_form_grader_check_reads_crosses_the_sandbox(session, typed):
    """What `grader check` reads in the student's kernel, the judge reads across the boundary:
    numpy makes a list of Fractions an array of objects, which stays in the student's process
    and is read through it (before, the codec took it for a numpy scalar and it could not be
    read at all)."""
    from grader.checks.compare import as_matrix

    reply = session.request({"op": "run", "source": "from fractions import Fraction as Fr\n"
                             f"from decimal import Decimal as D\nimport numpy as np\nA = {typed}"})
    assert reply["error"] is None, reply["error"]
    across = as_matrix(Link(session).get("A"), (2, 2), "A")
    from decimal import Decimal as D  # noqa: F401
    from fractions import Fraction as Fr  # noqa: F401

    import numpy as np  # noqa: F401 - the same text, evaluated here as `check` holds it
    here = as_matrix(eval(typed), (2, 2), "A")
    assert torch.allclose(across, here, atol=1e-3) and across.dtype == torch.float64
    assert torch.allclose(across, torch.tensor([[0.5, 1 / 3], [2 / 3, 0.25]],
                                               dtype=torch.float64), atol=1e-3)


def test_the_students_code_gets_an_input_laid_out_as_the_test_chose(session):
    """Through the grader's driver (run_student) and the boundary: a transposed input reaches
    the student's function transposed, so `.view` on it fails there as in their kernel."""
    from grader.checks import CheckFailure
    from grader.checks.reference import run_student

    session.request({"op": "run", "source": "def layout(x):\n    return x.is_contiguous(), "
                     "x.stride()\ndef flat(x):\n    return x.view(-1)"})
    link = Link(session)
    x = torch.randn(4, 6, dtype=torch.float64)
    assert run_student(link.get("layout"), (x.T,), "layout") == (False, (1, 6))
    assert run_student(link.get("layout"), (x[:, ::2],), "layout") == (False, (6, 2))
    assert run_student(link.get("layout"), (x,), "layout") == (True, (6, 1))
    with pytest.raises(CheckFailure, match="view"):
        run_student(link.get("flat"), (x.T,), "flat")
    assert torch.equal(run_student(link.get("flat"), (x,), "flat")[0], x.reshape(-1))


def test_gradients_cross_the_boundary(session):
    session.request({"op": "run", "source": "def f(x):\n    return (x ** 2).sum()"})
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    Link(session).get("f")(x).backward()
    assert torch.equal(x.grad, 2 * x.detach())


def test_each_backward_reaches_its_own_call_in_any_order(session):
    """The student's process numbers the calls it keeps for a backward pass and never gives a
    number twice: a backward pass taken out of order, between other calls, gets the gradients
    of its own call's inputs."""
    session.request({"op": "run", "source": "def f(x):\n    return (x ** 2).sum()"})
    f = Link(session).get("f")
    a, b, c = (torch.tensor([v, 2.0], requires_grad=True) for v in (1.0, 3.0, 5.0))
    out_a, out_b = f(a), f(b)
    out_a.backward()
    out_c = f(c)  # a call after a backward pass: the number of b's call stays b's
    out_b.backward()
    out_c.backward()
    for x in (a, b, c):
        assert torch.equal(x.grad, 2 * x.detach())


def test_calls_nothing_can_go_back_to_are_let_go(session):
    """A call with inputs that require gradients leaves its outputs and inputs in the student's
    process for a backward pass; once the grader's graph of it is gone, the next request says
    so and that process lets them go. A graph still held keeps its call."""
    import gc

    session.request({"op": "run", "source": "def f(x):\n    return (x ** 2).sum()"})
    link = Link(session)
    f = link.get("f")
    x = torch.ones(1000, dtype=torch.float64, requires_grad=True)
    held = f(x)
    for _ in range(20):
        f(x)  # each output dropped at once: nothing can call backward on it
    gc.collect()
    assert link.request({"op": "ping"})["kept"] == 1
    held.backward()
    assert torch.equal(x.grad, 2 * x.detach())
    del held
    gc.collect()
    assert link.request({"op": "ping"})["kept"] == 0


def test_a_detached_call_keeps_nothing_and_still_refuses_a_change_in_place(session):
    """run_student detaches what a call returns, so its call is no autograd node here and the
    student's process keeps nothing of it for a backward pass, even while the value is held.
    Its inputs still require gradients there: changing one in place is still an error."""
    from grader.checks import CheckFailure
    from grader.checks.reference import run_student

    session.request({"op": "run", "source": "def f(x):\n    return (x ** 2).sum()\n"
                     "def g(x):\n    x.mul_(2)\n    return x"})
    link = Link(session)
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    held = link.call(link.get("f"), (x,), {}, detached=True)
    assert held.item() == 3.0 and not held.requires_grad
    assert link.request({"op": "ping"})["kept"] == 0
    attached = link.get("f")(x)  # the same call as a test's own: kept for its backward pass
    assert attached.requires_grad and link.request({"op": "ping"})["kept"] == 1
    (out,) = run_student(link.get("f"), (x.detach(),), "f")
    assert out.item() == 3.0 and out.grad_fn is None
    with pytest.raises(CheckFailure, match="leaf Variable that requires grad"):
        run_student(link.get("g"), (x.detach(),), "g")


def test_a_remote_call_switches_the_builtins_off_where_the_students_code_runs(session):
    """compare_outputs on a handle: the student's process refuses the built-in, imported either
    way; the grader's own copy is never swapped out meanwhile (nothing of the student's runs
    here)."""
    import torch.nn.functional as F

    import solutions
    from grader.checks import CheckFailure, compare_outputs
    from grader.sandbox import forbidden

    session.request({"op": "run", "source":
                     "import torch.nn.functional as F\n"
                     "from torch.nn.functional import scaled_dot_product_attention as sdpa\n"
                     "def lazy(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n"
                     "def lazier(q, k, v):\n    return sdpa(q, k, v)\n"
                     "def mine(q, k, v):\n"
                     "    return torch.softmax(q @ k.mT / k.shape[-1] ** 0.5, -1) @ v\n"
                     "import torch"})
    link, ours = Link(session), F.scaled_dot_product_attention
    q = torch.randn(2, 3, 4, dtype=torch.float64)
    seen = []
    send = session.request

    def spy(message, *args, **kwargs):  # what the grader's copy is while a call is out
        if message["op"] == "call":
            seen.append((F.scaled_dot_product_attention is ours, message["forbidden"]))
        return send(message, *args, **kwargs)

    session.request = spy
    for name in ("lazy", "lazier"):
        with pytest.raises(CheckFailure, match="switched off"):
            compare_outputs(link.get(name), lambda *a: solutions.scaled_dot_product_attention(
                *a)[0], (q, q, q), name)
    compare_outputs(link.get("mine"), lambda *a: solutions.scaled_dot_product_attention(*a)[0],
                    (q, q, q), "mine")
    assert len(seen) >= 3 and all(intact and "F.scaled_dot_product_attention" in names
                                  for intact, names in seen)
    assert forbidden.ACTIVE is None and F.scaled_dot_product_attention is ours


def test_built_ins_stay_off_only_while_calls_ask_for_them(session):
    """The student's process keeps the built-ins off across calls in a row that ask for the
    same ones (worker.switch_off); a call asking for others, or none, and every other operation
    find them as a fresh switch would. A name or attribute the student's code bound to the
    built-in during one call is off again at the next."""
    from grader.judge.remote import StudentError  # the student's process's CheckFailure
    from grader.sandbox import forbidden

    session.request({"op": "run", "source":
                     "import torch\nimport torch.nn.functional as F\n"
                     "def norm(x):\n    return torch.softmax(x, -1)\n"
                     "def keep(x, _sm=torch.softmax, _F=F.softmax):\n"
                     "    global sm\n    sm = _sm\n    F.softmax = _F\n"
                     "    return x\n"
                     "def through_name(x):\n    return sm(x, -1)\n"
                     "def through_F(x):\n    return F.softmax(x, -1)\n"
                     "def drop(x):\n    del torch.Tensor.softmax\n    return x\n"})
    link = Link(session)
    norm, keep = link.get("norm"), link.get("keep")
    through_name, through_F = link.get("through_name"), link.get("through_F")
    x = torch.randn(2, 3, dtype=torch.float64)
    expected = torch.softmax(x, -1)

    def off():
        return forbidden.announced(forbidden.SOFTMAX, attention=False)

    for _ in range(2):  # in a row, the same ones asked for: the switch is kept
        with off(), pytest.raises(StudentError, match="torch.softmax is switched off"):
            norm(x)
    with off():
        keep(x)  # binds `sm` and F.softmax to the built-ins it held since its definition
    for fn, name in ((through_name, "torch.softmax"), (through_F, "F.softmax")):
        with off(), pytest.raises(StudentError, match=f"{name} is switched off"):
            fn(x)
    with forbidden.announced(attention=True):  # others asked for: softmax is back on
        assert torch.allclose(norm(x), expected)
    with off(), pytest.raises(StudentError):
        norm(x)
    assert torch.allclose(norm(x), expected)  # no switch asked for
    with off(), pytest.raises(StudentError):
        norm(x)
    with off():
        link.get("drop")(x)  # takes the stand-in off torch.Tensor: there is nothing to put back
    reply = session.request({"op": "run", "source": "torch.softmax(torch.zeros(2), 0)\n"
                                                     "torch.zeros(2).softmax(0)"})
    assert reply["error"] is None, "a cell ran with the built-ins still off"
    assert torch.allclose(through_name(x), expected) and torch.allclose(through_F(x), expected)


def test_an_input_changed_in_place_in_the_students_process_is_caught(session):
    """The grader's inputs travel as copies: the student's process compares its own after the
    call, for every kind of tensor (a mask or indices too, not only what requires gradients).
    The code gets ordinary tensors of its own: one it resizes is caught the same way."""
    from grader.checks import CheckFailure, compare_outputs

    session.request({"op": "run", "source":
                     "import torch\n"
                     "def flip(T, mask):\n    mask.logical_not_()\n"
                     "    return torch.ones(T, T, dtype=torch.bool).tril()\n"
                     "def quiet(T, x):\n    with torch.no_grad():\n        x.mul_(2)\n"
                     "    return torch.ones(T, T, dtype=torch.bool).tril()\n"
                     "def grow(T, x):\n    x.resize_(5)\n"
                     "    return torch.ones(T, T, dtype=torch.bool).tril()\n"
                     "def fine(T, mask):\n    return torch.ones(T, T, dtype=torch.bool).tril()"})
    link = Link(session)

    def reference(T, _):
        return torch.ones(T, T, dtype=torch.bool).tril()

    mask, x = torch.tensor([True, False]), torch.randn(2, dtype=torch.float64)
    for name, given in (("flip", mask), ("quiet", x), ("grow", x), ("grow", mask)):
        with pytest.raises(CheckFailure, match="changed its second argument in place"):
            compare_outputs(link.get(name), reference, (3, given), name)
    compare_outputs(link.get("fine"), reference, (3, mask), "fine")
    assert torch.equal(mask, torch.tensor([True, False])), "the grader's own copy is untouched"


def test_what_the_students_process_says_was_changed_is_only_ever_a_position():
    class Forged:  # a reply from a process that lies about the arguments it changed
        def request(self, message):
            return {"ok": True, "value": None, "changed": ["0", -1, 2, 7, 1.0, 1, None]}

    link = Link(Forged())
    changed = []
    link.call(link.remote(codec.Ref(1, "function", "f")), (1, 2, 3), {}, changed)
    assert changed == [2, 1]


def test_student_exceptions_come_back_as_builtin_types_only(session):
    session.request({"op": "run", "source":
                     "class Weird(Exception): pass\n"
                     "def bad(): raise ValueError('nope')\ndef odd(): raise Weird('x')"})
    link = Link(session)
    with pytest.raises(ValueError, match="nope"):
        link.get("bad")()
    with pytest.raises(StudentError, match="Weird: x"):
        link.get("odd")()


ANSWERS_SOURCE = """
import torch
def f(x):
    return 2 * x
w = torch.arange(3.0)
n = 7
class Deep:
    pass
deep = [1]
for _ in range(40):  # nested beyond what a message may carry: `get` refuses it
    deep = [deep]
del Deep
"""


def _as_get_leaves_it(link, name):
    try:
        return link.get(name)
    except Exception as e:
        return e


def _same(a, b):
    if isinstance(a, Exception):
        return type(a) is type(b) and str(a) == str(b)
    if isinstance(a, Remote):
        return isinstance(b, Remote) and a._ref.id == b._ref.id
    return torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


def test_a_test_cells_answers_come_in_one_request_each_as_get_leaves_it(session):
    """The answers a test cell takes (judge._import_answers) travel in one request; each name
    ends as `get` alone leaves it: a value, a reference, NameError, or get's own error."""
    session.request({"op": "run", "source": ANSWERS_SOURCE})
    link = Link(session)
    names = ["f", "w", "n", "deep", "Deep", "gone"]
    alone = {name: _as_get_leaves_it(link, name) for name in names}
    assert isinstance(alone["gone"], NameError) and isinstance(alone["Deep"], NameError)
    assert "nested too deeply" in str(alone["deep"])
    sent = []
    request = session.request
    session.request = lambda message, **k: sent.append(message["op"]) or request(message, **k)
    together = link.get_many(names)
    assert sent == ["get_many"], sent
    assert list(together) == names
    for name in names:
        assert _same(alone[name], together[name]), (name, alone[name], together[name])
    assert torch.equal(together["f"](torch.ones(2)), torch.full((2,), 2.0))


class _Forged:
    """A session whose process answers get_many as a hostile one might; `get` truthfully."""

    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def request(self, message, **k):
        self.asked.append(message.get("name") or message["op"])
        if message["op"] == "get_many":
            if isinstance(self.answer, Exception):
                raise self.answer
            return {"ok": True, "values": self.answer}
        return {"ok": True, "value": {"n": 7}[message["name"]]}


@pytest.mark.parametrize("answer", [
    "not a dict", {}, {"n": "not a node"}, {"n": {"neither": 1}}, ValueError("over the limit")])
def test_an_answer_that_is_not_one_is_asked_for_again_name_by_name(answer):
    forged = _Forged(answer)
    assert Link(forged).get_many(["n"]) == {"n": 7}
    assert forged.asked == ["get_many", "n"]


def test_a_forged_error_for_one_name_stays_that_names():
    forged = _Forged({"n": {"error": {"ename": "KeyError", "evalue": "x"}},
                      "m": {"error": "garbage"}})
    found = Link(forged).get_many(["n", "m"])
    assert isinstance(found["n"], KeyError) and isinstance(found["m"], StudentError)
    assert forged.asked == ["get_many"]


def test_student_code_cannot_make_a_user_namespace(session):
    """Being "root" in a user namespace of one's own (`unshare -r`) opens kernel code that only
    such a root reaches: the sandbox forbids creating one, by a system call or by the tool."""
    if not session.confined.sandboxed:
        pytest.skip("no sandbox on this machine")
    session.request({"op": "run", "source": """
import ctypes, os, subprocess

def by_system_call():  # in a child: unshare(CLONE_NEWUSER) needs a single-threaded process
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        os._exit(0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno() or 255)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

def by_tool():
    run = subprocess.run(["unshare", "--user", "--map-root-user", "id", "-u"],
                         capture_output=True, text=True)
    return run.returncode, run.stdout.strip()
"""})
    link = Link(session)
    assert link.get("by_system_call")() != 0, "unshare(CLONE_NEWUSER) succeeded"
    code, uid = link.get("by_tool")()
    assert code != 0 and uid != "0", f"`unshare -r id -u` printed {uid!r}"


def test_of_sys_the_sandbox_shows_at_most_the_huge_page_settings_read_only(session):
    """The sandbox server's malloc reads the kernel's transparent huge page settings
    (grader.startup.huge_pages.TUNING), so that one folder of /sys is bound, read-only, for the
    server; a student's process (Landlock: it reads only what the worker allows) sees nothing of
    /sys, and at most that folder where Landlock is missing. Its settings cannot be written, and the
    tuning is not in the student's environment."""
    if not session.confined.sandboxed:
        pytest.skip("no sandbox on this machine")
    session.request({"op": "run", "source": """
import os

def sys_tree():
    return sorted(os.path.join(d, n)[len("/sys"):] for d, dirs, files in os.walk("/sys")
                  for n in dirs + files)

def write_setting(path):
    try:
        with open(path, "w") as f:
            f.write("always")
        return "written"
    except OSError as e:
        return type(e).__name__

def tuning():
    return os.environ.get("GLIBC_TUNABLES")
"""})
    link = Link(session)
    tree = link.get("sys_tree")()
    assert all(p in ("/kernel", "/kernel/mm") or p.startswith("/kernel/mm/transparent_hugepage")
               for p in tree), tree
    assert link.get("write_setting")(namespaces.HUGE_PAGES + "/enabled") != "written"
    assert link.get("tuning")() is None, "the server's malloc tuning reached the student"


def test_the_sandbox_servers_heap_is_in_huge_pages_where_the_kernel_offers_them(session):
    """A fork copies, and an exit drops, one page-table entry per page of the server: its malloc
    asks for huge pages (grader.startup.huge_pages.TUNING), where the kernel's setting allows
    them."""
    try:
        mode = Path(namespaces.HUGE_PAGES, "enabled").read_text()
    except OSError:
        pytest.skip("this kernel has no transparent huge pages")
    if "[never]" in mode:
        pytest.skip("transparent huge pages are off on this machine")
    from grader.sandbox.launcher import zygote

    server = zygote(session.confined).host_pid
    rollup = Path(f"/proc/{server}/smaps_rollup").read_text()
    huge_kb = int(rollup.split("AnonHugePages:")[1].split()[0])
    assert huge_kb >= 16 * 1024, f"the sandbox server holds {huge_kb} kB in huge pages"


def test_a_hanging_cell_is_killed_within_its_timeout(session):
    session.limits.cell_timeout = 1
    with pytest.raises(WorkerDied, match="longer than"):
        session.request({"op": "run", "source": "while True:\n    pass"})
    assert not session.alive


def test_limits_come_from_the_assignment_then_the_command_line(tmp_path):
    import nbformat

    from grader.nbgrader.execute import plan

    source = tmp_path / "source" / "hw"
    source.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(metadata={"grader": {"limits": {"cell_timeout": 300}}})
    nbformat.write(nb, source / "hw.ipynb")
    limits = plan(tmp_path, "hw", "ann",
                  Limits(cell_timeout=60, memory_bytes=2**31)).limits["hw"]
    assert limits.cell_timeout == 300, "the assignment's own limit wins"
    assert limits.memory_bytes == 2**31
    nbformat.write(nbformat.v4.new_notebook(), source / "hw.ipynb")
    assert plan(tmp_path, "hw", "ann").limits["hw"] == Limits()


def test_released_helper_files_replace_the_students_copies(tmp_path):
    from grader.nbgrader.execute import scratch_files

    release = tmp_path / "release" / "hw"
    submitted = tmp_path / "submitted" / "ann" / "hw"
    for folder in (release / "data", submitted / "data"):
        folder.mkdir(parents=True)
    (release / "data" / "table.csv").write_text("the instructor's table")
    (release / "hw.ipynb").write_text("{}")
    (submitted / "data" / "table.csv").write_text("a table made to pass")
    (submitted / "notes.txt").write_text("mine")
    (submitted / "torch.py").write_text("allclose = lambda *a: True")
    (submitted / "link.txt").symlink_to("/etc/hostname")
    flags = []
    files = scratch_files(submitted, release, flags)
    assert files["data/table.csv"] == b"the instructor's table"
    assert files["notes.txt"] == b"mine"
    assert "torch.py" not in files
    assert "link.txt" not in files, "a link is never followed into the scratch folder"
    assert "hw.ipynb" not in files, "no released notebook in the scratch folder"
    assert {"helper", "shadowing"} <= {f["kind"] for f in flags}


# ----- nothing of one student reaches the next (the IPC namespace, keyrings, configuration) --

LEAVE_IPC = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
made = {"shm": libc.shmget(0x5EC1, 4096, 0o1600), "msg": libc.msgget(0x5EC2, 0o1600),
        "sem": libc.semget(0x5EC3, 1, 0o1600)}
with open("/dev/mqueue/left-by-the-last-student", "w"):
    pass
made["mqueue"] = os.listdir("/dev/mqueue")
"""
FIND_IPC = """
import os
found = {kind: open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]
         for kind in ("shm", "msg", "sem")}
found["mqueue"] = os.listdir("/dev/mqueue")
"""


def _student(source: str, name: str):
    s = Session({}, Limits(cell_timeout=10, notebook_timeout=60))
    s.start()
    try:
        reply = s.request({"op": "run", "source": source})
        assert reply["error"] is None, reply["error"]
        return Link(s).get(name)
    finally:
        s.close()


def test_ipc_objects_of_one_student_are_gone_for_the_next():
    """Students graded one after another share the sandbox's IPC namespace: what one of them
    makes there (System V shared memory, message queues, semaphores, POSIX message queues) is
    removed with the turn's processes and files."""
    if not Session({}).confined.sandboxed:
        pytest.skip("no sandbox on this machine")
    made = _student(LEAVE_IPC, "made")
    assert all(made[kind] >= 0 for kind in ("shm", "msg", "sem")), made  # the attack worked
    assert made["mqueue"] == ["left-by-the-last-student"]
    assert _student(FIND_IPC, "found") == {"shm": [], "msg": [], "sem": [], "mqueue": []}


def test_the_students_process_cannot_use_the_kernels_keyrings():
    """Keys outlive the turn (the user's keyrings) and reach across sandboxes (by serial
    number, as `nobody`): the three system calls are refused (keyrings.py)."""
    import ctypes

    try:
        ctypes.CDLL("libseccomp.so.2")
    except OSError:
        pytest.skip("no libseccomp here: keyrings are cleared after each turn instead")
    tried = _student("""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def tried(*call):
    return libc.syscall(*call), errno.errorcode.get(ctypes.get_errno())
tried = [tried(248, b"user", b"left", b"x", 1, ctypes.c_long(-4)),  # add_key into @u
         tried(250, 0, ctypes.c_long(-4), 0),  # keyctl(GET_KEYRING_ID, @u)
         tried(249, b"user", b"left", None, 0)]  # request_key
""", "tried")
    assert [list(t) for t in tried] == [[-1, "EPERM"]] * 3, tried


def test_the_environments_configuration_is_covered_in_the_sandbox():
    """etc/ under the interpreter's prefixes (a site-wide nbgrader config may hold a database
    URL), Jupyter's data and /usr's etc folders are covered: the student reads none of it, and
    Python still imports the course's packages."""
    if not Session({}).confined.sandboxed:
        pytest.skip("no sandbox on this machine")
    covered = namespaces.config_paths()
    assert os.path.realpath(os.path.join(sys.prefix, "etc")) in covered or not os.path.exists(
        os.path.join(sys.prefix, "etc"))
    readable = _student(f"""
import os, torch, grader.checks
def readable(paths):
    found = []
    for top in paths:
        for folder, dirs, files in os.walk(top):
            for name in files:
                try:
                    with open(os.path.join(folder, name), "rb") as f:
                        found.append(os.path.join(folder, name) if f.read(1) else None)
                except OSError:
                    pass
    return [f for f in found if f]
readable = readable({covered!r})
""", "readable")
    assert readable == [], readable[:10]


def test_a_sweep_that_cannot_finish_ends_the_server(tmp_path):
    """Fail closed: where a sweep leaves anything, the server answers what is left and ends
    (the grader then starts a fresh sandbox: launcher.Zygote.sweep)."""
    import json
    import socket
    import threading

    from grader.sandbox import zygote

    (tmp_path / "locked" / "deeper").mkdir(parents=True)
    (tmp_path / "locked" / "deeper" / "file").write_text("left")
    os.chmod(tmp_path / "locked", 0)
    assert zygote._emptied(str(tmp_path)) and os.listdir(tmp_path) == []
    ours, theirs = socket.socketpair()
    setup = {"sandboxed": False, "empty": [str(tmp_path / "gone")], "keep": set()}
    server = threading.Thread(target=zygote.serve, args=(theirs, setup), daemon=True)
    server.start()
    ours.sendall(json.dumps({"op": "sweep"}).encode())
    answer = json.loads(ours.makefile("rb").readline())
    server.join(5)
    assert answer["unswept"] == [f"files in {tmp_path / 'gone'}"]
    assert not server.is_alive(), "the server went on after a sweep that did not finish"


def test_where_keyrings_are_not_blocked_a_sweep_empties_the_shared_ones():
    """The fallback where libseccomp is missing (keyrings.clear, run by the sweep): keys put in
    the user, user-session and persistent keyrings by one student are gone for the next. Run
    in a sandbox of its own, without the filter (this process's keyrings are left alone)."""
    import json
    import subprocess

    if namespaces.probe() is not None:
        pytest.skip("no sandbox on this machine")
    code = """
import ctypes, json
from grader.sandbox import keyrings
libc = ctypes.CDLL(None, use_errno=True)
persistent = libc.syscall(250, 22, -1, ctypes.c_long(-4))
added = [libc.syscall(248, b"user", b"left-behind", b"x", 1, ctypes.c_long(ring))
         for ring in (-4, -5, persistent)]
left = keyrings.clear()
found = [libc.syscall(250, 10, ctypes.c_long(ring), b"user", b"left-behind", 0)
         for ring in (-4, -5, persistent)]
print(json.dumps({"added": added, "left": left, "found": found}))
"""
    run = subprocess.run(namespaces.command([sys.executable, "-c", code]), capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert all(key > 0 for key in result["added"]), result  # the keys were there
    assert result["left"] == [] and result["found"] == [-1, -1, -1], result


def test_the_configuration_is_covered_where_the_prefix_is_seen_and_where_it_is(tmp_path,
                                                                             monkeypatch):
    """A venv reached through a link is bound twice (as seen, and where it really is): its
    etc/ is covered in both places. A config folder that is itself a link (share/jupyter
    here) is not covered: the cover would land where it leads."""
    (tmp_path / "real" / "etc" / "jupyter").mkdir(parents=True)
    (tmp_path / "real" / "pip.conf").write_text("[global]\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "elsewhere" / "jupyter").mkdir(parents=True)
    (tmp_path / "real" / "share").mkdir()
    (tmp_path / "real" / "share" / "jupyter").symlink_to(tmp_path / "elsewhere" / "jupyter")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "link"))
    covered = namespaces.config_paths()
    for path in ("link/etc", "real/etc", "link/pip.conf", "real/pip.conf"):
        assert str(tmp_path / path) in covered, (path, covered)
    assert not [p for p in covered if "share" in p and p.startswith(str(tmp_path))], covered
    command = namespaces.command(["true"])
    assert command[command.index(str(tmp_path / "real" / "etc")) - 1] == "--tmpfs"
    assert command[command.index(str(tmp_path / "real" / "pip.conf")) - 2:][:2] == [
        "--ro-bind", "/dev/null"]


def test_the_sweep_keeps_the_sandboxs_own_mounts_and_empties_the_rest(tmp_path, monkeypatch):
    """A checkout under /tmp is bound into the sandbox's /tmp: the sweep must leave that mount
    (and the folders leading to it) and still remove everything a student left, beside it too;
    otherwise every sweep 'fails' and each student gets a fresh sandbox."""
    from grader.sandbox import zygote

    tmp = tmp_path / "tmp"
    venv = tmp / "checkout" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("the interpreter")
    (tmp / "checkout" / "left-behind").write_text("a student's file beside the mount")
    (tmp / "left-behind-dir" / "inner").mkdir(parents=True)
    (tmp / "left-behind-dir" / "inner" / "file").write_text("x")
    monkeypatch.setattr(zygote, "_mounts_below", lambda folder: {str(venv)})
    assert zygote._emptied(str(tmp))
    assert (venv / "bin" / "python").read_text() == "the interpreter"
    assert sorted(p.name for p in tmp.iterdir()) == ["checkout"]
    assert sorted(p.name for p in (tmp / "checkout").iterdir()) == [".venv"]


def test_mount_points_are_read_with_their_escapes_undone():
    from grader.sandbox import zygote

    points = zygote._mounts_below("/")
    assert "/proc" in points or "/sys" in points, points
