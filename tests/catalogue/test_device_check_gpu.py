"""The catalogue's answers on two devices: the device check's verdict on meta tensors (CPU) is
what CUDA does with the same code.

For each exercise a hidden test checks with `expect_follows_device`, every catalogued mistake
and answer form of it is run in this process (the source notebook's code, with the edit), once
on the meta device under the probe and, where a GPU is lent (`pytest -m cuda`), once on CUDA.
Verdicts: "ok" (runs, results on the inputs' device), "mixes" (a CPU tensor meets the inputs'
device), "cpu" (runs, but returns a result on the CPU), "needs data" (meta only: the code reads
values, so the check does not judge it).
"""

from __future__ import annotations

import functools

import nbformat
import pytest
import torch
from catalogue import MISTAKES
from forms import CODE_FORMS

from grader.sandbox.probe import MIXED, DeviceProbe

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # a notebook's code run per case: `make test` keeps it, test-fast not
SKIP_CELLS = {"train", "measure_memory", "measure_skipping", "mask_convention_check"}


def _inputs(device):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device)

    return {"qkv": (randn(2, 13, 8), randn(2, 13, 8), randn(2, 13, 4)),
            "x16": randn(3, 7, 16), "x12": randn(3, 4, 12), "x6": randn(2, 3, 6),
            "memory": randn(2, 7, 16), "query": randn(2, 5, 16),
            "idx": torch.randint(0, 13, (2, 4), generator=g).to(device),
            "pad": (torch.arange(7) < torch.tensor([7, 3])[:, None])[:, None, :].to(device),
            "causal": torch.ones(13, 13, dtype=torch.bool).tril().to(device)}


# (assignment, solution cell) -> (what, call(namespace, device, inputs) -> outputs)
CALLS = {
    ("self_attention", "sdpa"): ("scaled_dot_product_attention", lambda ns, d, i: (
        ns["scaled_dot_product_attention"](*i["qkv"]),
        ns["scaled_dot_product_attention"](*i["qkv"], i["causal"]))),
    ("self_attention", "mha"): ("MultiHeadAttention", lambda ns, d, i: ns["MultiHeadAttention"](
        16, 4).to(d)(i["query"], i["memory"], i["memory"], i["pad"])),
    ("efficient_attention", "online_softmax"): ("online_softmax", lambda ns, d, i: ns[
        "online_softmax"](i["qkv"][0], 3)),
    ("efficient_attention", "tiled_attention"): ("tiled_attention", lambda ns, d, i: (
        ns["tiled_attention"](*i["qkv"], 5, 3), ns["tiled_attention"](*i["qkv"], 5, 3, True))),
    ("transformer", "layernorm"): ("LayerNorm", lambda ns, d, i: ns["LayerNorm"](6).to(d)(
        i["x6"])),
    ("transformer", "mlp"): ("MLP", lambda ns, d, i: ns["MLP"](12, 48, 0.5).to(d).eval()(
        i["x12"])),
    ("transformer", "block"): ("Block", lambda ns, d, i: tuple(
        ns["Block"](16, 4, 40, norm_first=nf).to(d).eval()(i["x16"]) for nf in (False, True))),
    ("transformer", "decoder"): ("Decoder", lambda ns, d, i: ns["Decoder"](
        13, 24, 3, 48, 2, max_len=10).to(d).eval()(i["idx"])),
}
CASES = [c for c in [*MISTAKES, *CODE_FORMS] if (c.assignment, c.edit.cell) in CALLS]
SLIPS = {c.id for c in MISTAKES if c.cause == "stray_cpu_tensor"}


@functools.cache
def _source(assignment):
    return nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)


def namespace(case) -> dict:
    """The notebook's code as this answer has it: given cells and solution cells, run here."""
    ns = {"__name__": "__notebook__"}
    threads = torch.get_num_threads()
    try:
        for cell in _source(case.assignment).cells:
            meta = cell.metadata.get("nbgrader", {})
            grade_id = meta.get("grade_id")
            if cell.cell_type != "code" or (meta.get("grade") and not meta.get("solution")) \
                    or grade_id in SKIP_CELLS:
                continue
            source = cell.source
            if grade_id == case.edit.cell:
                assert case.edit.old in source, case.id
                source = source.replace(case.edit.old, case.edit.new, 1)
            exec(compile(source, f"<{case.id}: {grade_id}>", "exec"), ns)
    finally:
        torch.set_num_threads(threads)
    return ns


def verdict(case, device: str) -> str:
    what, call = CALLS[case.assignment, case.edit.cell]
    ns = namespace(case)
    inputs = _inputs(device)
    try:
        with torch.no_grad(), DeviceProbe() if device == "meta" else torch.no_grad():
            out = call(ns, device, inputs)
    except Exception as e:
        if device == "meta":  # the probe's words; expect_follows_device judges nothing else
            return "mixes" if MIXED in str(e) else "needs data"
        if isinstance(e, RuntimeError) and "same device" in str(e):  # CUDA's (test_device_check)
            return "mixes"
        raise
    outputs = out if isinstance(out, tuple) else (out,)
    flat = [t for o in outputs for t in (o if isinstance(o, tuple) else (o,))]
    return "cpu" if any(t.device.type == "cpu" for t in flat) else "ok"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_probe_sees_each_slip_and_passes_each_answer(case):
    found = verdict(case, "meta")
    if case.id in SLIPS:
        assert found in ("mixes", "cpu"), found
    else:
        assert found in ("ok", "needs data"), found


@pytest.mark.cuda
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cuda_agrees_with_the_probe(case):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    on_meta = verdict(case, "meta")
    if on_meta == "needs data":
        pytest.skip("the probe does not judge code that reads values")
    assert verdict(case, "cuda") == on_meta
