"""Is a mutant equivalent to the reference? A differential harness that never reads the tests.

Both programs are built the same way: the source notebook's code cells run in a fresh
namespace (the solution cells as a student hands them in, one of them mutated; no test cell, no
training or measuring cell), then every probe of the assignment (tests/mutants/regimes.py) runs
in each namespace with the same seed, and the results are compared: outputs, the gradients of
the inputs and of every parameter, and the exception raised where one is. Agreement on every
probe = equivalent (the mutant must keep full marks); any disagreement = not equivalent (it must
lose points). What "agree" means for floats is the grader's own tolerance for the dtype
(grader.checks.compare.tolerances): the definition of a right answer, not a test.

The probes are a seeded grid of regimes (Hypothesis is not in requirements/lock.txt, so no new
dependency): B = 1, one token, N_q != N_k, d_k != d_v, non-contiguous and strided views, tiny and
huge scales, float32 and float64, gradients, parameters perturbed so that no two modules are
alike, training and evaluation, lengths that no tile divides.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass
from pathlib import Path

import nbformat
import torch

from grader.checks.compare import tolerances
from grader.demo.sample_class import _solution_text

# Cells that train, time or measure: minutes of CPU, and they call what the probes call anyway.
SKIP_CELLS = {"train", "measure_memory", "measure_skipping", "mask_convention_check"}
SECONDS_PER_MUTANT = 60


@dataclass(frozen=True)
class Raised:
    """A probe that raised: two programs agree when both raise the same kind of error."""

    kind: str

    def __repr__(self):
        return f"raised {self.kind}"


def cells(source_nb: Path) -> list[tuple[str | None, str]]:
    """(grade_id, code) of the cells that define what students write and what it needs."""
    out = []
    for cell in nbformat.read(source_nb, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade_id") in SKIP_CELLS:
            continue
        if meta.get("grade") and not meta.get("solution"):
            continue  # a test cell
        text = _solution_text(cell) if meta.get("solution") else cell.source
        out.append((meta.get("grade_id"), text))
    return out


def namespace(program: list[tuple[str | None, str]]) -> dict:
    """The namespace the program's cells leave; a cell that raises is recorded, not fatal (the
    probes that need what it defines then raise NameError, in the same way for both)."""
    ns: dict = {"__name__": "__mutant__"}
    for grade_id, code in program:
        try:
            exec(compile(code, f"<cell {grade_id}>", "exec"), ns)  # noqa: S102 - our own cells
        except Exception as error:  # noqa: BLE001 - a mutant may raise anything
            ns.setdefault("__cell_errors__", []).append((grade_id, type(error).__name__))
    return ns


def mutated(program, cell: str, old: str, new: str):
    """The program with one Edit applied to one cell (as make_submission applies it)."""
    out, done = [], False
    for grade_id, code in program:
        if grade_id == cell and not done and old in code:
            code, done = code.replace(old, new, 1), True
        out.append((grade_id, code))
    if not done:
        raise ValueError(f"mutant of cell {cell!r}: its region is not in the notebook any more; "
                         "generate the mutants again")
    return out


def run_probe(probe, ns, seed: int):
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    try:
        return probe.run(ns, generator)
    except Exception as error:  # noqa: BLE001 - the mutant may raise anything
        return Raised(type(error).__name__)


def disagreement(a, b, where: str = "", atol=None, rtol=None) -> str | None:
    """None when a (the reference's result) and b (the mutant's) agree, else what differs.
    atol, rtol: where the text allows less precision than the dtype (answers typed by hand)."""
    if isinstance(a, Raised) or isinstance(b, Raised):
        return None if repr(a) == repr(b) else f"{where}: reference {_short(a)}, mutant {_short(b)}"
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{where}: reference {_short(a)}, mutant {_short(b)}"
        return _tensor_disagreement(a, b, where, atol, rtol)
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a)} vs {sorted(b)}"
        return next((d for k in a if (d := disagreement(a[k], b[k], f"{where}.{k}", atol,
                                                         rtol))), None)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return f"{where}: {len(a)} results vs {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b, strict=True)) if (d := disagreement(
            x, y, f"{where}[{i}]", atol, rtol))), None)
    if isinstance(a, float) and isinstance(b, int | float):
        same = math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-8) or (math.isnan(a) and math.isnan(b))
        return None if same else f"{where}: {a!r} vs {b!r}"
    return None if type(a) is type(b) and a == b else f"{where}: {_short(a)} vs {_short(b)}"


def _tensor_disagreement(a: torch.Tensor, b: torch.Tensor, where: str, atol=None,
                         rtol=None) -> str | None:
    for what in ("shape", "dtype", "device"):
        if getattr(a, what) != getattr(b, what):
            return f"{where}: {what} {getattr(a, what)} vs {getattr(b, what)}"
    if a.device.type == "meta":
        return None
    a, b = a.detach(), b.detach()
    if not a.is_floating_point():
        return None if torch.equal(a, b) else f"{where}: values differ"
    atol, rtol = tolerances(a.dtype, atol, rtol)
    close = torch.isclose(b, a, atol=atol, rtol=rtol, equal_nan=True)
    if bool(close.all()):
        return None
    i = int((~close).flatten().nonzero()[0])
    return (f"{where}: {int((~close).sum())} of {a.numel()} values differ, e.g. "
            f"{a.flatten()[i].item():.6g} vs {b.flatten()[i].item():.6g}")


def _short(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor{tuple(x.shape)}"
    text = repr(x)
    return text if len(text) < 60 else text[:57] + "..."


class _Timeout(BaseException):  # not an Exception: no probe may swallow it
    pass


@dataclass
class Reference:
    """The reference program's namespace and its result on every probe (computed once)."""

    ns: dict
    results: list

    @classmethod
    def of(cls, program, probes, seed: int = 0) -> Reference:
        ns = namespace(program)
        if ns.get("__cell_errors__"):
            raise RuntimeError(f"the reference solutions raise: {ns['__cell_errors__']}")
        return cls(ns, [run_probe(probe, ns, seed) for probe in probes])


def verdict(reference: Reference, program, probes, seed: int = 0) -> str | None:
    """None if the program agrees with the reference on every probe, else the first
    disagreement (probe name: what differs). A mutant that runs too long differs."""

    def alarm(signum, frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(SECONDS_PER_MUTANT)
    try:
        ns = namespace(program)
        if ns.get("__cell_errors__"):
            return f"defining the cells: {ns['__cell_errors__']}"
        for probe, expected in zip(probes, reference.results, strict=True):
            found = run_probe(probe, ns, seed)
            if (why := disagreement(expected, found, "", probe.atol, probe.rtol)) is not None:
                return f"{probe.name}{why}"
        return None
    except _Timeout:
        return f"ran over {SECONDS_PER_MUTANT} s"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
