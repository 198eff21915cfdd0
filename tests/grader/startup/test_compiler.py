"""grader/startup/compiler.py: PyTorch's compiler imported when something compiles, with the
same results and the same compiled graphs as PyTorch's own lazy import. Each case runs in a
fresh interpreter: this one may have imported the compiler already."""

import json

from tests.support.processes import interpreters_at_once

_DEFER = "from grader.startup import compiler\ndeferred = compiler.defer()\n"

_META = """
import json, sys, torch
import torch.nn as nn, torch.nn.functional as F
x = torch.randn(2, 5, 8, device="meta")
mask = torch.ones(5, 5, dtype=torch.bool, device="meta").tril()
shapes = [
    list(mask.shape),
    list(torch.triu(torch.full((5, 5), float("-inf"), device="meta"), diagonal=1).shape),
    list((torch.arange(10, device="meta")[:, None]
          * torch.exp(torch.arange(0, 8, 2, device="meta") * -0.5)).sin().shape),
    list(F.scaled_dot_product_attention(x, x, x, attn_mask=mask).shape),
    list(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, device="meta")(x).shape),
    str(torch.ones(3, device="meta", dtype=torch.float16).add(1, alpha=2).dtype),
]
print(json.dumps({"shapes": shapes, "compiler": "torch._dynamo" in sys.modules,
                  "deferred": globals().get("deferred")}))
"""

# A function PyTorch guards (type promotion's wrapper), compiled: the compiler must keep out of
# it as PyTorch's own guard makes it, so the graphs and the breaks are the same either way.
_COMPILED = """
import json, sys, torch
import torch._dynamo
from torch._refs import add as guarded_add

def f(x):
    y = torch.softmax(x, -1)
    return guarded_add(y, 1.5, alpha=2) * 3

x = torch.randn(4, 4, dtype=torch.float64)


def guards():  # the guard(s) found along the wrappers of torch._refs.add, by module
    found, fn = [], guarded_add
    while fn is not None:
        guard = fn.__dict__.get("__dynamo_disable")
        if guard is not None:
            found.append(guard.__module__.split(".")[0])
        fn = getattr(fn, "__wrapped__", None)
    return found


before = guards()
guarded_add(x, 1)  # its first call since the compiler's import
explained = torch._dynamo.explain(f)(x)
out = torch.compile(f, backend="eager")(x)
print(json.dumps({"graphs": explained.graph_count, "breaks": explained.graph_break_count,
                  "ops": explained.op_count, "equal": torch.equal(out, f(x)),
                  "guards": [before, guards()]}))
"""


def _run_all(*codes: str) -> list[dict]:
    """The JSON each code prints last, each in a fresh interpreter, all started at once; 300 s."""
    done = interpreters_at_once(*codes, timeout=300)
    for run in done:
        assert run.returncode == 0, run.stderr[-3000:]
    return [json.loads(run.stdout.strip().splitlines()[-1]) for run in done]


def _run(code: str) -> dict:
    return _run_all(code)[0]


def test_the_meta_device_runs_without_importing_the_compiler():
    plain, deferred = _run_all(_META, _DEFER + _META)
    assert plain["compiler"], "PyTorch no longer imports its compiler here: nothing to defer"
    assert deferred["deferred"] > 100, deferred  # about 290 guarded functions
    assert not deferred["compiler"], deferred
    assert deferred["shapes"] == plain["shapes"], (deferred, plain)


def test_compiling_after_defer_sees_what_pytorchs_own_guard_gives():
    plain, deferred = _run_all(_COMPILED, _DEFER + _COMPILED)
    assert plain["equal"] and deferred["equal"]
    assert plain["breaks"] >= 1, plain  # the guard is a break in the graph: this test can tell
    for key in ("graphs", "breaks", "ops"):
        assert deferred[key] == plain[key], (key, deferred, plain)
    # the stand-in until its first call with the compiler there, then PyTorch's own guard
    assert plain["guards"] == [[], ["torch"]], plain
    assert deferred["guards"] == [["grader"], ["torch"]], deferred


def test_nothing_is_deferred_once_the_compiler_is_imported():
    found = _run("import json, torch._dynamo\n" + _DEFER + "print(json.dumps(deferred))")
    assert found == 0
