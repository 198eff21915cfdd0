"""The judge remembers reference outputs across notebooks (grader/judge/memo.py): only where the
result is provably a function of the arguments, so a remembered answer is never a wrong one."""

import functools
import subprocess
import sys
import types

import pytest
import torch

import solutions
from grader.checks import CheckFailure, all_cases, compare_outputs
from grader.judge.memo import MEMO, Memo
from solutions import mistakes


def qkv(seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(2, 3, 4, generator=g, dtype=dtype) for _ in range(3))


def test_the_same_reference_on_equal_inputs_is_worked_out_once():
    memo = Memo()
    first = memo.call(solutions.scaled_dot_product_attention, *qkv())
    again = memo.call(solutions.scaled_dot_product_attention, *qkv())  # new, equal tensors
    assert (memo.misses, memo.hits) == (1, 1)
    assert again is first
    causes = memo.call(mistakes.scaled_dot_product_attention, *qkv())
    assert memo.call(mistakes.scaled_dot_product_attention, *qkv()) is causes
    assert memo.hits == 2


def _with_default_dtype(dtype, fn, *args):
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        return fn(*args)
    finally:
        torch.set_default_dtype(saved)


@pytest.mark.parametrize("change", ["one element", "dtype", "shape", "argument type",
                                    "negative zero", "grad mode", "default dtype"])
def test_any_difference_in_the_call_is_a_new_computation(change):
    memo = Memo()
    sdpa = solutions.scaled_dot_product_attention
    q, k, v = qkv()
    memo.call(solutions.causal_mask, 1)
    memo.call(sdpa, q, k, v, None, False, 0.0)
    memo.call(solutions.sinusoidal_encoding, 3, 4)
    if change == "one element":
        q2 = q.clone()
        q2[1, 2, 3] += 1e-12
        memo.call(sdpa, q2, k, v, None, False, 0.0)
    elif change == "dtype":
        memo.call(sdpa, q.float(), k.float(), v.float(), None, False, 0.0)
    elif change == "shape":
        memo.call(sdpa, *(t.reshape(3, 2, 4) for t in (q, k, v)), None, False, 0.0)
    elif change == "argument type":
        memo.call(sdpa, q, k, v, None, 0, 0.0)  # False == 0 in Python, not here
    elif change == "negative zero":
        memo.call(sdpa, q, k, v, None, False, -0.0)
    elif change == "grad mode":
        with torch.no_grad():
            memo.call(sdpa, q, k, v, None, False, 0.0)
    else:
        _with_default_dtype(torch.float64, memo.call, solutions.sinusoidal_encoding, 3, 4)
    assert (memo.misses, memo.hits) == (4, 0)


def test_a_module_is_keyed_by_its_weights_and_settings():
    memo = Memo()
    x = qkv(dtype=torch.float32)[0]
    torch.manual_seed(0)
    ref = solutions.MultiHeadAttention(4, 2)
    torch.manual_seed(0)
    same = solutions.MultiHeadAttention(4, 2)
    memo.call(ref, x, x, x)
    memo.call(same, x, x, x)
    assert (memo.misses, memo.hits) == (1, 1)
    with torch.no_grad():
        same.out_proj.weight[0, 0] += 1.0  # changed in place
    memo.call(same, x, x, x)
    torch.manual_seed(0)
    one_head = solutions.MultiHeadAttention(4, 1)  # other settings, weights of the same shapes
    memo.call(one_head, x, x, x)
    assert (memo.misses, memo.hits) == (3, 1)
    # the likely mistakes of a module, as the hidden tests pass them
    memo.call(functools.partial(mistakes.multi_head_attention, ref), x, x, x)
    memo.call(functools.partial(mistakes.multi_head_attention, ref), x, x, x)
    assert (memo.misses, memo.hits) == (4, 2)
    # a hook may change what any module returns: nothing with a module is looked up then
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o)
    try:
        memo.call(ref, x, x, x)
        memo.call(functools.partial(mistakes.multi_head_attention, ref), x, x, x)
    finally:
        handle.remove()
    assert (memo.misses, memo.hits) == (4, 2)


def test_a_module_is_keyed_by_every_tensor_it_holds():
    """A buffer that is not saved with the weights (persistent=False: the fixed table of
    positions) changes what the module returns as much as a weight does."""
    memo = Memo()
    x = qkv()[0]
    encoding = solutions.SinusoidalPositionalEncoding(4, 8)
    first = memo.call(encoding, x)
    assert "pe" not in encoding.state_dict()  # what the key once took the module's tensors from
    with torch.no_grad():
        encoding.pe.mul_(2)
    second = memo.call(encoding, x)
    assert memo.misses == 2 and memo.hits == 0
    assert torch.equal(second, encoding(x)) and not torch.equal(second, first)
    encoding.pe = encoding.pe.double()  # the same values, another dtype
    memo.call(encoding, x)
    assert memo.misses == 3


def test_what_draws_random_numbers_is_never_remembered():
    memo = Memo()
    q, k, v = qkv()
    drop = [memo.call(solutions.scaled_dot_product_attention, q, k, v, None, False, 0.5)[0]
            for _ in range(3)]
    assert memo.hits == 0
    assert not torch.equal(drop[0], drop[1])  # each call drew its own dropout
    torch.manual_seed(0)
    layer = solutions.MultiHeadAttention(4, 2, dropout=0.5).train()
    x = q.float()
    out = [memo.call(layer, x, x, x)[1] for _ in range(2)]
    assert memo.hits == 0 and not torch.equal(out[0], out[1])


def _passes_for_the_reference(fn, monkeypatch):
    """Make `fn` look like the reference package's own module-level function (for this test)."""
    module = types.ModuleType(f"solutions._memo_test_{fn.__name__}")
    fn.__module__, fn.__qualname__ = module.__name__, fn.__name__
    setattr(module, fn.__name__, fn)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return fn


def test_only_the_reference_package_own_plain_functions_are_remembered(monkeypatch):
    memo = Memo()
    calls = []

    def local(x):  # the test's own function: not the reference's
        calls.append(x)
        return x * 2

    def with_state():
        seen = []

        def inner(x):  # captures a variable: may depend on more than its arguments
            seen.append(x)
            return x + len(seen)
        return inner

    inner = _passes_for_the_reference(with_state(), monkeypatch)
    x = torch.ones(3)
    assert torch.equal(memo.call(inner, x), x + 1)
    assert torch.equal(memo.call(inner, x), x + 2)
    memo.call(local, x)
    memo.call(local, x)
    assert len(calls) == 2 and memo.hits == memo.misses == 0

    counter = []

    def counted(x, counter=counter):  # a default, not a captured variable
        counter.append(1)
        return x + 1

    trusted = _passes_for_the_reference(counted, monkeypatch)
    memo.call(trusted, x)
    memo.call(trusted, torch.ones(3))
    assert len(counter) == 1 and memo.hits == 1

    class Proxy:  # stands for a student's object seen through the sandbox
        def __add__(self, other):
            return self

    memo.call(trusted, Proxy())
    memo.call(trusted, Proxy())
    assert len(counter) == 3 and memo.hits == 1  # computed each time, never looked up
    subclass = torch.ones(3).as_subclass(type("Sub", (torch.Tensor,), {}))
    memo.call(trusted, subclass)
    memo.call(trusted, subclass)
    assert len(counter) == 5  # a tensor subclass may override any operation


def test_what_is_remembered_does_not_change_with_the_caller_tensors(monkeypatch):
    counter = []

    def unchanged(x, counter=counter):  # returns its input itself
        counter.append(1)
        return x

    trusted = _passes_for_the_reference(unchanged, monkeypatch)
    memo = Memo()
    x = torch.ones(3)
    kept = memo.call(trusted, x)
    x.mul_(5)  # the test that owns x changes it afterwards
    assert torch.equal(memo.call(trusted, torch.ones(3)), torch.ones(3))
    assert kept is not x and memo.hits == 1 and len(counter) == 1


def test_the_memory_is_bounded():
    memo = Memo(max_entries=4)
    for n in range(10):
        memo.call(solutions.causal_mask, n + 1)
    assert len(memo.results) == 4
    memo.call(solutions.causal_mask, 10)
    memo.call(solutions.causal_mask, 1)
    assert (memo.hits, memo.misses) == (1, 11)


def test_a_student_after_a_remembered_reference_gets_the_same_verdict(monkeypatch):
    """Grading with remembered outputs gives each student what a fresh judge would."""
    monkeypatch.setattr(MEMO, "enabled", True)  # as in a judge (across_notebooks)
    monkeypatch.setattr(MEMO, "results", type(MEMO.results)())
    monkeypatch.setattr(MEMO, "hits", 0)  # (other tests' judges may have used it before)
    q, k, v = qkv()

    def right(q, k, v):
        return solutions.scaled_dot_product_attention(q, k, v)

    def unscaled(q, k, v):
        att = torch.softmax(q @ k.transpose(-2, -1), -1)
        return att @ v, att

    for _ in range(2):  # the second round answers from memory
        compare_outputs(right, solutions.scaled_dot_product_attention, (q, k, v), "sdpa",
                        names=("output", "weights"),
                        likely_causes=mistakes.scaled_dot_product_attention)
        with pytest.raises(CheckFailure, match=r"not divided by sqrt\(d\)"), all_cases():
            compare_outputs(unscaled, solutions.scaled_dot_product_attention, (q, k, v),
                            "sdpa", names=("output", "weights"),
                            likely_causes=mistakes.scaled_dot_product_attention)
    assert MEMO.hits >= 4  # the second round's reference and mistakes came from memory


def test_a_tensor_key_is_its_values_whatever_its_layout():
    """Equal values give one key, read in place or through a copy (strides, view bits, a dtype
    numpy lacks); anything else that differs gives another."""
    from grader.judge.memo import key

    t = torch.randn(4, 3, dtype=torch.float64)
    assert key(t.t()) == key(t.t().contiguous())  # strides
    assert key(torch.zeros(2).expand(3, 2)) == key(torch.zeros(3, 2))  # a stride of 0
    z = torch.randn(3, dtype=torch.complex128)
    assert key(z.conj()) == key(z.conj().resolve_conj())  # the conjugate bit
    assert key(z.conj().imag) == key(z.conj().imag.resolve_neg())  # the negative bit
    b = t.to(torch.bfloat16)
    assert key(b.t()) == key(b.t().contiguous()) != key(b.t().float())
    assert key(t) != key(t.reshape(3, 4).t())  # the same memory and shape, other values
    assert key(t) != key(t.reshape(3, 4)) != key(t.reshape(12))  # same bytes, other shapes
    assert key(t) != key(t.clone().requires_grad_())
    nudged = t.clone()
    nudged[3, 2] = torch.nextafter(nudged[3, 2], torch.tensor(float("inf"), dtype=t.dtype))
    assert key(t) != key(nudged)
    # one digest holds every tensor's bytes in a row: where one tensor ends is in the key
    row = torch.arange(6.0)
    assert key((row[:2], row[2:])) != key((row[:3], row[3:])) != key((row[:3], [row[3:]]))


def test_the_memory_is_off_outside_a_judge():
    """Where one notebook runs once (an instructor's notebook in a kernel, the bench's test
    work), keying every call costs more than its repeats save: the memory starts off in every
    process, and only a judge turns it on (grader.judge.run,
    tests/grader/pipeline/test_pipeline.py)."""
    found = subprocess.run([sys.executable, "-c", "from grader.judge.memo import MEMO; "
                            "print(MEMO.enabled, len(MEMO.results))"],
                           capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["False", "0"]


def test_a_memory_that_is_off_works_out_every_call_and_keeps_nothing():
    memo = Memo(enabled=False)
    first = memo.call(solutions.scaled_dot_product_attention, *qkv())
    again = memo.call(solutions.scaled_dot_product_attention, *qkv())
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert (memo.hits, memo.misses, len(memo.results)) == (0, 0, 0)
