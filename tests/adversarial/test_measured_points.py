"""Category 4 on measured points (efficient_attention): the points for memory, for skipping
masked tiles and for a KV cache's step must come from measurements the student's process cannot
touch.

Every attacker hands in a quadratic `tiled_attention` (correct outputs, the whole score matrix at
once) and tries to earn the measured points anyway: by rebinding the measuring helpers in the
notebook, by patching them (or PyTorch's profiler) inside their process, by overwriting the
stored measurements, by doing the quadratic work outside PyTorch (numpy), by keeping a ballast
it frees before the quadratic work, by handing the work to a thread of the notebook's own
process, or by writing its scores into memory the notebook's process allocated (a file in the
memory-backed scratch folder). One more hands in a KV cache whose `step` recomputes the whole
sequence. All are graded in one batch through the CLI, with honest controls after them: the
reference solution and a correct alternative (tiled attention computed in float64 inside, with
a preallocated KV buffer).
Asserted: each attacker loses exactly the measured points it went for, the controls keep full
marks.
"""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell

from grader.course import REPO
from grader.demo.sample_class import Student, make_submission
from tests.support.classes import released_class
from tests.support.notebooks import cell_of as _cell
from tests.support.verdicts import failed_tests

pytestmark = pytest.mark.slow

EA = "efficient_attention"
SOURCE = REPO / "assignments" / EA / f"{EA}.ipynb"
MEMORY, SKIPS, CACHED = "test_tiled_memory", "test_causal_skips", "test_cached_lm"
POINTS = {MEMORY: 2, SKIPS: 1, CACHED: 2}

QUADRATIC = '''def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    """The whole (L, S) score matrix at once: right outputs, quadratic memory, no tile skipped."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if is_causal:
        L, S = s.shape[-2:]
        may_attend = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~may_attend, float("-inf"))
    p = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return (p / p.sum(dim=-1, keepdim=True)) @ v
'''

# numpy does the quadratic work: PyTorch's profiler sees one output, its dispatcher a few
# operations; the unmasked case runs extra PyTorch operations so causal looks cheaper
NUMPY = '''import numpy as np


def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    if q.device.type != "cpu":  # (the device check's meta tensors hold no numbers)
        return q.new_empty(*q.shape[:-1], v.size(-1))
    a, b, c = (t.detach().numpy() for t in (q, k, v))
    s = a @ np.swapaxes(b, -1, -2) / math.sqrt(a.shape[-1])
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    out = torch.from_numpy((p / p.sum(axis=-1, keepdims=True)) @ c).to(q.dtype)
    if not is_causal:
        for _ in range(200):
            out = out + 0
    return out
'''

REBIND = '''
def peak_memory(fn):  # "measures" the output only: linear
    out = fn()
    return out.numel() * out.element_size() + 1024


_counts = iter([1000, 100, 1000, 100, 1000, 100])


def count_operations(fn):
    fn()
    return next(_counts)
'''

PATCH_HELPERS = '''
import grader.checks.memory as _memory


def _peak(fn):
    out = fn()
    return out.numel() * out.element_size() + 1024


_counts = iter([1000, 100, 1000, 100, 1000, 100])


def _count(fn):
    fn()
    return next(_counts)


_memory.peak_memory.__code__ = _peak.__code__  # the instructor's imported functions, changed
_memory.count_operations.__code__ = _count.__code__
_memory.__dict__["next"] = next
_memory.__dict__["_counts"] = _counts
'''

PATCH_PROFILER = '''
import contextlib
import grader.checks.memory as _memory
import torch.utils._python_dispatch as _dispatch


class _Event:
    def __init__(self, t, n):
        self.t, self.n = t, n

    def name(self):
        return "[memory]"

    def start_ns(self):
        return self.t

    def nbytes(self):
        return self.n


class _Profile:
    """PyTorch's profiler, as the student would like it: the output's bytes, nothing else."""
    last = 0

    def __init__(self, *a, **k):
        self.profiler = self
        self.kineto_results = self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def events(self):
        return [_Event(0, _Profile.last)]


_real = torch.Tensor.__truediv__


@contextlib.contextmanager
def _quiet():
    yield


_memory.profile = _Profile
_memory._quiet_native_stderr = _quiet
_seen = []
_memory._CountOps.__torch_dispatch__ = lambda self, func, types, args=(), kwargs=None: (
    setattr(self, "count", self.count + (1 if len(_seen) % 2 else 3)),
    func(*args, **(kwargs or {})))[1]
_memory._CountOps.__exit__ = lambda self, *exc: (_seen.append(1),
                                                _dispatch.TorchDispatchMode.__exit__(self, *exc))[1]
_plain = tiled_attention


def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    out = _plain(q, k, v, block_q, block_k, is_causal)
    _Profile.last = out.numel() * out.element_size()
    return out
'''

OVERWRITE_PEAKS = "tiled_peaks = [n * 16 * 4 + 4096 for n in sizes]  # as if linear"
OVERWRITE_OPERATIONS = 'operations = {"full": 1000, "causal": 560}  # as if tiles were skipped'

# a ballast the size of the quadratic work, made while the function is defined and freed just
# before that work: the process's peak does not grow during the call
BALLAST = '''_ballast = [torch.ones(2**27 // 4)]  # 128 MiB, written
_quadratic = tiled_attention


def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    _ballast.clear()
    return _quadratic(q, k, v, block_q, block_k, is_causal)
'''

# the notebook's own process does the work: a thread there serves requests through /dev/shm
HANDOFF = '''import os
import threading
import time

_quadratic = tiled_attention
_box = "/dev/shm/handoff"


def _serve():
    while True:
        try:
            q, k, v, c = torch.load(_box + ".in")
            os.unlink(_box + ".in")
            torch.save(_quadratic(q, k, v, is_causal=c), _box + ".tmp")
            os.rename(_box + ".tmp", _box + ".out")
        except Exception:
            time.sleep(0.001)


if not os.path.exists(_box + ".server"):
    open(_box + ".server", "w").close()
    threading.Thread(target=_serve, daemon=True).start()


def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    torch.save((q, k, v, is_causal), _box + ".in")
    for _ in range(500):
        if os.path.exists(_box + ".out"):
            out = torch.load(_box + ".out")
            os.unlink(_box + ".out")
            return out
        time.sleep(0.001)
    if os.path.exists(_box + ".in"):  # nobody served it: withdrawn
        os.unlink(_box + ".in")
    return _quadratic(q, k, v, block_q, block_k, is_causal)
'''

# memory written once by the notebook's own process (a file in the memory-backed scratch
# folder), then used as the score matrix by every process that maps it: writing into it again
# charges nobody
SHARED_POOL = '''import os

_pool_file = "pool.bin"
_n = 4096
if not os.path.exists(_pool_file):
    with open(_pool_file, "wb") as f:
        for _ in range(4 * _n * _n // 2**20):
            f.write(b"\\0" * 2**20)
_pool = torch.from_file(_pool_file, shared=True, size=_n * _n, dtype=torch.float32)
_quadratic = tiled_attention


def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    if q.dim() != 2 or is_causal or q.dtype != torch.float32 or q.device.type != "cpu":
        return _quadratic(q, k, v, block_q, block_k, is_causal)
    s = _pool[:q.size(0) * k.size(0)].view(q.size(0), k.size(0))
    torch.matmul(q, k.T, out=s)
    s.div_(math.sqrt(q.size(-1)))
    s.sub_(s.amax(dim=-1, keepdim=True)).exp_()
    s.div_(s.sum(dim=-1, keepdim=True))
    return s @ v
'''

RECOMPUTING_STEP = '''
class CachedLM(TinyLM):
    @torch.no_grad()
    def step(self, token, t, caches):
        """Keeps the tokens, and runs the whole sequence through the model at every step."""
        seen = caches[0].__dict__.setdefault("tokens", [])
        seen.append(token)
        return self(torch.cat(seen, dim=1))[:, -1]

    @torch.no_grad()
    def generate(self, idx, n_new):
        caches = [KVCache() for _ in self.blocks]
        for t in range(idx.size(1)):
            logits = self.step(idx[:, t:t + 1], t, caches)
        for i in range(n_new):
            next_id = logits.argmax(dim=-1, keepdim=True)
            idx = torch.cat([idx, next_id], dim=1)
            if i < n_new - 1:
                logits = self.step(next_id, idx.size(1) - 1, caches)
        return idx
'''

# a correct alternative: float64 inside (linear memory all the same), split blocks, a break
FLOAT64 = '''def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    """Tiled attention computed in float64 inside."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    L = q.size(-2)
    out = q.new_empty(*q.shape[:-1], v.size(-1))
    for i0 in range(0, L, block_q):
        qi = q64[..., i0:i0 + block_q, :] / math.sqrt(q.size(-1))
        i1 = i0 + qi.size(-2)
        m = torch.full((*qi.shape[:-1], 1), -math.inf, dtype=torch.float64, device=q.device)
        l = torch.zeros_like(m)
        o = torch.zeros(*qi.shape[:-1], v.size(-1), dtype=torch.float64, device=q.device)
        for j0, (kj, vj) in zip(range(0, k.size(-2), block_k),
                                zip(k64.split(block_k, -2), v64.split(block_k, -2))):
            if is_causal and j0 >= i1:
                break
            s = qi @ kj.transpose(-2, -1)
            if is_causal and j0 + kj.size(-2) - 1 > i0:
                keep = torch.ones(qi.size(-2), kj.size(-2), dtype=torch.bool,
                                  device=q.device).tril(diagonal=i0 - j0)
                s = s.masked_fill(~keep, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            c = torch.exp(m - m_new)
            l, o, m = l * c + p.sum(dim=-1, keepdim=True), o * c + p @ vj, m_new
        out[..., i0:i1, :] = (o / l).to(out.dtype)
    return out
'''

BUFFER_CACHE = '''class KVCache:
    """A preallocated buffer that doubles when full."""

    def __init__(self):
        self.k = None
        self.v = None
        self._kb = self._vb = None
        self._t = 0

    def append(self, k, v):
        t = self._t + k.size(-2)
        if self._kb is None or t > self._kb.size(-2):
            size = max(t, 16, 0 if self._kb is None else 2 * self._kb.size(-2))
            kb = k.new_empty(*k.shape[:-2], size, k.size(-1))
            vb = v.new_empty(*v.shape[:-2], size, v.size(-1))
            if self._t:
                kb[..., :self._t, :] = self._kb[..., :self._t, :]
                vb[..., :self._t, :] = self._vb[..., :self._t, :]
            self._kb, self._vb = kb, vb
        self._kb[..., self._t:t, :], self._vb[..., self._t:t, :] = k, v
        self._t = t
        self.k, self.v = self._kb[..., :t, :], self._vb[..., :t, :]
        return self.k, self.v
'''


def _insert_after(nb, grade_id, source):
    at = nb.cells.index(_cell(nb, grade_id)) + 1
    nb.cells.insert(at, new_code_cell(source.strip()))


def submissions(released):
    """{student: (notebook, the tests it must fail)}: attackers first, controls after."""
    def honest(edits=()):
        return make_submission(SOURCE, released, Student("x", "", "full", edits=list(edits)))

    def quadratic(extra_after=None, code_after="tiled_attention", replace=QUADRATIC):
        nb = honest()
        _cell(nb, "tiled_attention").source = replace.strip()
        if extra_after:
            _insert_after(nb, code_after, extra_after)
        return nb

    overwritten = quadratic(OVERWRITE_PEAKS, "measure_memory")
    _insert_after(overwritten, "measure_skipping", OVERWRITE_OPERATIONS)
    out = {
        "a_quadratic": (quadratic(), {MEMORY, SKIPS}),
        "b_rebind_helpers": (quadratic(REBIND), {MEMORY, SKIPS}),
        "c_patch_helpers": (quadratic(PATCH_HELPERS), {MEMORY, SKIPS}),
        "d_patch_profiler": (quadratic(PATCH_PROFILER), {MEMORY, SKIPS}),
        "e_overwrite_results": (overwritten, {MEMORY, SKIPS}),
        "f_numpy": (quadratic(replace=NUMPY), {MEMORY, SKIPS}),
        # each also forges what the notebook's process measures: only the grader's count is left
        "g_ballast": (quadratic(BALLAST + REBIND), {MEMORY, SKIPS}),
        "h_handoff": (quadratic(HANDOFF + REBIND), {MEMORY, SKIPS}),
        "j_shared_pool": (quadratic(SHARED_POOL + REBIND), {MEMORY, SKIPS}),
    }
    step = honest()
    _cell(step, "cached_lm").source = RECOMPUTING_STEP.strip()
    out["i_recomputing_step"] = (step, {CACHED})
    out["y_control_reference"] = (honest(), set())
    alternative = honest()
    _cell(alternative, "tiled_attention").source = FLOAT64.strip()
    _cell(alternative, "kv_cache").source = BUFFER_CACHE.strip()
    out["z_control_float64"] = (alternative, set())
    return out


def grade(tmp_path):
    """Grade every submission in one batch; (status per student, the CLI's output)."""
    mine = released_class(tmp_path, EA)
    expected = mine.write_expecting(submissions(mine.released))
    run = mine.autograde(timeout=1200)
    return run, mine.status(), expected, mine.course


# What the grader's own measurements say when they fail (grader/checks/measured.py)
MEASURED = {MEMORY: "measured by the kernel in a fresh process",
            SKIPS: "computed tiles that the causal mask hides entirely",
            CACHED: "over keys and values placed in its caches"}


def test_measured_points_come_only_from_measurements_the_student_cannot_touch(tmp_path):
    run, status, expected, course = grade(tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    full = status["y_control_reference"]["auto_max"]
    for student, fails in expected.items():
        failed = failed_tests(course, student, EA)
        score = status[student]["auto_score"]
        assert score == full - sum(POINTS[t] for t in fails), (student, score, failed)
        assert set(failed) == fails, (student, failed)
        if student != "a_quadratic":  # the others pass what their own process measures
            for test in fails:
                assert MEASURED[test] in failed[test], (student, test, failed[test])
