"""The device check (grader/checks/devices.py): what it sees on the meta device is what a GPU does.

Each snippet below uses a tensor the way student code does, and says what happens on a GPU:
it runs ("ok"), stops because a CPU tensor meets the GPU's ("mixes"), or runs and leaves its
result on the CPU ("cpu"). On a CPU, the probe must give that verdict on meta tensors; on a GPU
(`pytest -m cuda`), CUDA itself must give it, so the rules are held to CUDA's, not to our memory
of them.
"""

from __future__ import annotations

import math

import pytest
import torch

import solutions
from grader.checks import CheckFailure
from grader.checks.devices import expect_follows_device
from grader.checks.reference import run_student
from grader.sandbox.probe import MIXED, DeviceProbe
from solutions import efficient


def _filled(x):
    out = torch.empty(3, 5, device=x.device)
    out[0:2] = torch.zeros(2, 5)  # a copy from the CPU: CUDA allows it
    out[2:] = x[:1]
    return out


def _written_to_cpu(x):
    out = torch.zeros(3, 5)
    out[:] = x  # a copy to the CPU: allowed, and the result stays there
    return out


def _cpu_loop_bound(x):
    n = int(x.new_tensor(x.size(-1)).cpu())  # a value read back from the CPU: 5 on a GPU
    return sum(x[:, i] for i in range(n))


def _index_put(x, values):
    s = x.clone()
    s[:, torch.tensor([0, 2])] = values  # CPU indices
    return s


# name: (what CUDA does, the code[, what the probe says instead: "not judged" where it reads
# values it does not have])
SNIPPETS = {
    # what CUDA runs
    "divide by a 0-d CPU tensor": ("ok", lambda x, i, emb: x / torch.tensor(2.0)),
    "where with a 0-d CPU tensor": ("ok", lambda x, i, emb: torch.where(
        x > 0, x, torch.tensor(0.0))),
    "sqrt of a 0-d CPU tensor": ("ok", lambda x, i, emb: x / torch.sqrt(torch.tensor(5.0))),
    "masked_fill with a 0-d CPU value": ("ok", lambda x, i, emb: x.masked_fill(
        x > 0, torch.tensor(-math.inf))),
    "index with CPU indices": ("ok", lambda x, i, emb: x[torch.arange(2)]),
    "index with a CPU boolean mask": ("ok", lambda x, i, emb: x[torch.tensor([True, False, True])]),
    "write through CPU indices": ("ok", lambda x, i, emb: _index_put(x, x.new_zeros(3, 2))),
    "write one CPU value through indices": ("ok", lambda x, i, emb: _index_put(
        x, torch.tensor([1.0]))),
    "copy a CPU tensor in": ("ok", lambda x, i, emb: _filled(x)),
    "compare sizes with a CPU tensor": ("ok", lambda x, i, emb: x * x.is_same_size(
        torch.zeros(3, 5))),
    "mask on the device": ("ok", lambda x, i, emb: x.masked_fill(
        ~torch.ones(3, 5, dtype=torch.bool, device=x.device).tril(), -math.inf)),
    "like and new_": ("ok", lambda x, i, emb: x + torch.zeros_like(x) + x.new_ones(5)),
    "embedding of ids on the device": ("ok", lambda x, i, emb: emb(i)),
    "positions on the device": ("ok", lambda x, i, emb: emb(torch.arange(3, device=i.device))),
    "finfo fill": ("ok", lambda x, i, emb: x.masked_fill(x > 0, torch.finfo(x.dtype).min)),
    "loop bound read back from the CPU": ("ok", lambda x, i, emb: _cpu_loop_bound(x),
                                          "not judged"),
    # what CUDA refuses
    "add a CPU tensor": ("mixes", lambda x, i, emb: x + torch.zeros(3, 5)),
    "matmul with a CPU tensor": ("mixes", lambda x, i, emb: x @ torch.ones(5, 2)),
    "running max started on the CPU": ("mixes", lambda x, i, emb: torch.maximum(
        torch.full((3, 1), -math.inf), x.amax(-1, keepdim=True))),
    "mask built on the CPU": ("mixes", lambda x, i, emb: x.masked_fill(
        ~torch.ones(3, 5, dtype=torch.bool).tril(), -math.inf)),
    "a 0-d CPU mask": ("mixes", lambda x, i, emb: x.masked_fill(torch.tensor(True), 0.0)),
    "clamp to a 0-d CPU bound": ("mixes", lambda x, i, emb: x.clamp(min=torch.tensor(0.0))),
    "stack with a 0-d CPU tensor": ("mixes", lambda x, i, emb: torch.stack(
        [x.sum(), torch.tensor(1.0)])),
    "einsum with a 0-d CPU tensor": ("mixes", lambda x, i, emb: torch.einsum(
        "ij,->ij", x, torch.tensor(2.0))),
    "write CPU values through indices": ("mixes", lambda x, i, emb: _index_put(
        x, torch.zeros(3, 2))),
    "a CPU tensor indexed on the device": ("mixes", lambda x, i, emb: torch.ones(5)[i]),
    "positions built on the CPU": ("mixes", lambda x, i, emb: emb(torch.arange(3))),
    "concatenate a CPU tensor": ("mixes", lambda x, i, emb: torch.cat([x, torch.zeros(1, 5)])),
    "index_select with CPU indices": ("mixes", lambda x, i, emb: x.index_select(
        0, torch.tensor([0, 2]))),
    "gather with CPU indices": ("mixes", lambda x, i, emb: x.gather(
        1, torch.zeros(3, 1, dtype=torch.long))),
    "where with a CPU condition": ("mixes", lambda x, i, emb: torch.where(
        torch.ones(3, 5, dtype=torch.bool), x, 0.0)),
    "moved to the CPU, then mixed": ("mixes", lambda x, i, emb: x.cpu() @ x.T),
    # what CUDA runs, leaving the result on the CPU
    "written into a CPU tensor": ("cpu", lambda x, i, emb: _written_to_cpu(x)),
    "moved to the CPU": ("cpu", lambda x, i, emb: x.cpu() * 2),
}


def verdict(fn, device: str) -> str:
    x = torch.randn(3, 5).to(device)
    i = torch.tensor([1, 0, 2]).to(device)
    emb = torch.nn.Embedding(4, 5).to(device)
    try:
        with DeviceProbe() if device == "meta" else torch.no_grad():
            out = fn(x, i, emb)
    except (RuntimeError, NotImplementedError) as e:
        if device == "meta":  # the probe's words: expect_follows_device judges nothing else
            return "mixes" if MIXED in str(e) else "not judged"
        # CUDA's: "Expected all tensors to be on the same device" from most operations,
        # "expected self and mask to be on the same device" from masked_fill, "indices should
        # be either on cpu or on the same device as the indexed tensor" from indexing
        return "mixes" if "same device" in str(e) else f"error: {e}"
    return "cpu" if out.device.type == "cpu" else "ok"


@pytest.mark.parametrize("name", SNIPPETS)
def test_probe_gives_the_gpu_verdict(name):
    on_gpu, fn, *on_probe = SNIPPETS[name]
    assert verdict(fn, "meta") == (on_probe[0] if on_probe else on_gpu)


@pytest.mark.cuda
@pytest.mark.parametrize("name", SNIPPETS)
def test_cuda_gives_the_verdict(name):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    on_gpu, fn, *_ = SNIPPETS[name]
    assert verdict(fn, "cuda") == on_gpu


# --- expect_follows_device ---------------------------------------------------------------

def _qkv():
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(2, 9, 4, generator=g) for _ in range(3))


def tiled_mask_on_cpu(q, k, v, block_q=4, block_k=4, is_causal=False):
    L = q.size(-2)
    may_attend = torch.ones(L, L, dtype=torch.bool).tril()  # no device=: the slip
    s = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~may_attend, -math.inf)
    return torch.softmax(s, dim=-1) @ v


def tiled_out_on_cpu(q, k, v, block_q=4, block_k=4, is_causal=False):
    out = torch.zeros(*q.shape[:-1], v.size(-1))  # no device=: the result stays on the CPU
    out[:] = efficient.tiled_attention(q, k, v, block_q, block_k, is_causal)
    return out


def tiled_reading_a_value(q, k, v, block_q=4, block_k=4, is_causal=False):
    if torch.isnan(q).any().item():  # needs data: the check cannot judge this code
        raise ValueError("NaN input")
    return efficient.tiled_attention(q, k, v, block_q, block_k, is_causal)


def test_a_correct_function_passes():
    expect_follows_device(efficient.tiled_attention, (*_qkv(), 4, 4, True), "tiled_attention")


@pytest.mark.parametrize("slip, words", [
    (tiled_mask_on_cpu, "masked_fill was given a bool tensor of shape (9, 9) on the CPU"),
    (tiled_out_on_cpu, "returned a tensor on the CPU"),
])
def test_a_stray_cpu_tensor_fails_naming_its_cause(slip, words):
    with pytest.raises(CheckFailure) as failure:
        expect_follows_device(slip, (*_qkv(), 4, 4, True), "tiled_attention",
                              case="blocks (4, 4)")
    message = str(failure.value)
    assert words in message and "(blocks (4, 4))" in message
    assert "made on the CPU" in message  # the cause, proven by the operation it names


def test_code_that_needs_values_is_not_judged():
    expect_follows_device(tiled_reading_a_value, (*_qkv(), 4, 4, True), "tiled_attention")


def test_a_call_naming_the_meta_device_is_watched():
    def table(T, device=None):
        pe = torch.zeros(T, 4)  # no device=: the rows below are copied to the CPU
        pe[:, :2] = torch.ones(T, 2, device=device)
        return pe

    # as CUDA does, the copy lands on the CPU (meta alone: "Cannot copy out of meta tensor")
    (out,) = run_student(table, (3, "meta"), "table")
    assert out.device.type == "cpu" and out.shape == (3, 4)


def _pytree_verdict(value) -> bool:
    """What the walk stands in for: every leaf of PyTorch's own flatten, looked at."""
    from torch.utils._pytree import tree_flatten

    return any(t.device.type == "meta" if isinstance(t, torch.Tensor) else
               (isinstance(t, torch.device) and t.type == "meta") or t == "meta"
               for t in tree_flatten(value)[0] if isinstance(t, (torch.Tensor, torch.device,
                                                                   str)))


def _containers(leaf):
    """`leaf` inside every container a call's arguments can hold it in."""
    import collections

    pair = collections.namedtuple("pair", "a b")
    return [leaf, (leaf,), [1, [2, (leaf,)]], {"x": {"y": leaf}}, pair(0, leaf),
            collections.OrderedDict(k=leaf), collections.defaultdict(int, k=leaf),
            collections.deque([leaf]), ([], {"k": [leaf]})]


@pytest.mark.parametrize("leaf", [torch.ones(2, device="meta"), torch.ones(2), "meta", "cpu",
                                  torch.device("meta"), torch.device("cpu"), 3, None],
                         ids=["meta tensor", "cpu tensor", "'meta'", "'cpu'", "device meta",
                              "device cpu", "int", "None"])
def test_a_probe_call_is_seen_where_pytree_would_see_it(leaf):
    from grader.sandbox.probe import _on_probe, probing

    for value in _containers(leaf):
        assert _on_probe(value) == _pytree_verdict(value), value
        with probing(value, {}) as mode:
            assert isinstance(mode, DeviceProbe) == _pytree_verdict(value)


@pytest.mark.parametrize("leaf", [torch.ones(2, device="meta"), torch.ones(()), 3, None],
                         ids=["meta tensor", "cpu scalar", "int", "None"])
def test_the_probe_finds_an_operations_tensors_where_pytree_would(leaf):
    from torch.utils._pytree import tree_flatten

    from grader.sandbox.probe import _tensors_in

    other = torch.zeros(3, device="meta")
    for value in _containers(leaf):
        args, kwargs = (other, value, [other, value]), {"k": value}
        found = _tensors_in((args, kwargs), [])
        expected = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        assert [id(t) for t in found] == [id(t) for t in expected], value


def test_the_inputs_stay_where_they_were():
    q, k, v = _qkv()
    expect_follows_device(efficient.tiled_attention, (q, k, v, 4, 4), "tiled_attention")
    assert q.device.type == "cpu" and torch.isfinite(q).all()


# The references follow the device too (the course's own standard for solutions/), under the
# same probe: every reference the hidden tests compare with.
def _references():
    g = torch.Generator().manual_seed(1)
    qkv = tuple(torch.randn(2, 6, 8, generator=g) for _ in range(3))
    pad = solutions.padding_mask(torch.tensor([6, 3]), 6)[:, None, :]
    lm = solutions.DecoderOnlyLM(13, 16, 4, 64, 2, max_len=12).to("meta").eval()
    block = solutions.TransformerBlock(16, 4, 40, norm_first=False, activation="gelu")
    block = block.to("meta").eval()
    idx = torch.randint(0, 13, (2, 3), generator=g)
    return {
        "sdpa": (solutions.scaled_dot_product_attention, (*qkv, pad)),
        "sdpa, causal": (solutions.scaled_dot_product_attention,
                         (*qkv, solutions.causal_mask(6))),
        "multi-head": (solutions.MultiHeadAttention(8, 2).to("meta"), (*qkv, pad)),
        "online softmax": (efficient.online_softmax, (qkv[0], 4)),
        "tiled, causal": (efficient.tiled_attention, (*qkv, 4, 3, True)),
        "cached generation": (lambda i: efficient.generate_cached(lm, i, 5), (idx,)),
        "layer norm": (solutions.LayerNorm(8).to("meta"), (qkv[0],)),
        "MLP": (solutions.MLP(8, 32, dropout=0.5, activation="gelu").to("meta").eval(),
                (qkv[0],)),
        "block": (lambda x: block(x, is_causal=True), (torch.randn(2, 7, 16),)),
        "decoder": (lm, (idx,)),
        "greedy": (lambda i: lm.greedy_generate(i, 2), (idx,)),
    }


@pytest.mark.parametrize("name", list(_references()))
def test_each_reference_follows_the_device(name):
    fn, inputs = _references()[name]
    moved = tuple(t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs)
    with torch.no_grad(), DeviceProbe():
        out = fn(*moved)
    outputs = out if isinstance(out, tuple) else (out,)
    assert all(o.device.type == "meta" for o in outputs if isinstance(o, torch.Tensor))
