"""The figures that tests check against a text or a threshold, on other CPUs' kernels: run by
hand, `python tests/figures_across_cpus.py` (four settings in turn, each a few minutes on 2
cores: the capstone's six trainings take most of it; --quick leaves them out).

A number computed by a long sum, or by training a model, comes out slightly different on another
CPU: PyTorch picks its vector kernels by the CPU (AVX-512, AVX2, plain C: ATEN_CPU_CAPABILITY),
oneDNN and MKL theirs (ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS), and the thread count splits
sums differently. This machine can imitate the older CPUs: each setting below runs the figures in
a fresh interpreter, and the table printed shows, per figure, its value on each setting and the
spread (largest minus smallest; for gradients, relative to the value). The tolerances of
tests/solutions/test_written_experiments.py state these spreads. Then (unless --no-tests) the
tests that check such figures run under each setting, and must pass on all.

The lectures assert their own trained results; `make lectures-other-cpus` executes them on the
AVX2 and SSE4 settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
SSE4 = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}
# name: (environment, threads). This machine's own kernels first (AVX-512 where it has it).
SETTINGS = {
    "native 2t": ({}, 2),
    "native 1t": ({}, 1),
    "avx2 1t": (AVX2, 1),
    "sse4 2t": (SSE4, 2),
}
# the tests that check a figure of a long computation or a training run, against a text or a
# threshold (tests/lectures: the toolkit's training loops; the lectures' own asserts run in
# `make lectures-other-cpus`)
TESTS = [
    "tests/solutions/test_written_experiments.py",
    "tests/solutions/test_rnn.py::test_overfits_reversal",
    "tests/solutions/test_captioning.py::test_overfits_captions",
    "tests/solutions/test_transformer.py::test_lm_overfits_a_batch",
    "tests/lectures/test_seeds.py",
    "tests/lectures/test_char_lm.py",
    "tests/lectures/test_training.py",
]


def figures(quick: bool) -> dict[str, float]:
    """Every figure, by name, computed on this process's kernels and threads."""
    from tests.solutions import test_written_experiments as w

    out: dict[str, float] = {}
    for n, (largest, entropy) in w.spread_figures().items():
        out[f"self_attention N={n} largest"] = largest
        out[f"self_attention N={n} entropy"] = entropy
    naive, blocks = w.block_figures()
    out["efficient naive peak"] = naive
    for b, (peak, ops) in blocks.items():
        out[f"efficient block={b} peak"], out[f"efficient block={b} ops"] = peak, ops
    keys, train, loo, true, var = w.bandwidth_figures()
    for h in keys:
        for name, d in (("keys", keys), ("train", train), ("loo", loo), ("true", true)):
            out[f"soft_select h={h:g} {name}"] = d[h]
    out["soft_select var sin"] = var
    grads, att, z = w.translator_gradients(0)
    for kind, g in grads.items():
        for i in (31, 30, 29, 27, 23, 15, 0):
            out[f"rnn grad {kind} pos={i} (rel)"] = g[i].item()
    out["rnn z mean"], out["rnn att min"], out["rnn att max"] = (
        z.mean().item(), att.min().item(), att.max().item())
    grads64, _, _ = w.translator_gradients(0, S=64)
    out["rnn drop S=64 (rel)"] = (grads["attention"][:24].mean()
                                  / grads64["attention"][:56].mean()).item()
    fig = w.residual_stream(0)
    for (pre, depth), (rms, cos) in fig.items():
        if depth in w.DEPTHS:
            form = "pre" if pre else "post"
            out[f"transformer {form} L={depth} rms"] = rms
            out[f"transformer {form} L={depth} cos"] = cos
    out.update(training_margins())
    if not quick:
        for (n_kv, seed), loss in w.key_heads_losses().items():
            out[f"tiny_gpt kv={n_kv} seed={seed} held-out"] = loss
    return out


def training_margins() -> dict[str, float]:
    """What the training tests' thresholds compare, computed as they do."""
    import torch

    from lectures.toolkit.char_lm import CharCorpus, train_lm
    from tests.lectures import test_char_lm, test_seeds
    from tests.solutions import test_captioning, test_rnn, test_transformer
    from tests.solutions.conftest import _train_losses

    out = {}
    for name, test in (("rnn overfit", test_rnn.test_overfits_reversal),
                       ("captioning overfit", test_captioning.test_overfits_captions),
                       ("transformer lm overfit", test_transformer.test_lm_overfits_a_batch)):
        ratios = []

        def recording(params, loss_fn, steps=40, lr=1e-2, ratios=ratios):
            losses = _train_losses(params, loss_fn, steps, lr)
            ratios.append(losses[-1] / losses[0])
            return losses

        torch.manual_seed(0)  # (tests/solutions/conftest.py's autouse fixture)
        test(torch.Generator().manual_seed(1234), recording)
        out[f"{name}: last/first loss (test: < 0.3)"] = ratios[0]
    corpus = CharCorpus.from_text(test_char_lm.TEXT)
    history = train_lm(test_char_lm.tiny_lm(corpus), corpus, steps=60, ctx=16, batch=16,
                       lr=1e-2, eval_every=20, eval_batches=2)
    out["char_lm val last/first (test: < 0.5)"] = history.eval_val[-1] / history.eval_val[0]
    out["char_lm train last/first (test: < 0.5)"] = history.eval_train[-1] / history.eval_train[0]
    from lectures.toolkit.seeds import train_seeds
    seeds = (3, 7, 11)
    losses, _, _ = train_seeds(test_seeds.Tagger, seeds, test_seeds.batch, steps=40, lr=1e-2,
                               warmup=10, record=4, groups=["layers.0.", "layers.1."])
    worst = 0.0
    for i, seed in enumerate(seeds):
        want, _, _ = test_seeds.alone(seed, 40, 1e-2, 10, 4)
        worst = max(worst, ((losses[:, i] - want).abs() / want.abs()).max().item())
    out["seeds batched vs alone, largest relative loss gap (test: 1e-4)"] = worst
    return out


def run_setting(name: str, quick: bool) -> dict[str, float]:
    env, threads = SETTINGS[name]
    env = {**os.environ, **env, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    args = [sys.executable, __file__, "--dump", *(["--quick"] if quick else [])]
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{name}: the figures failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def spread(name: str, values: list[float]) -> float:
    low, high = min(values), max(values)
    if "(rel)" in name:
        return (high - low) / max(abs(high), 1e-30)
    return high - low


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if "--dump" in argv:
        import torch

        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        capability = torch.backends.cpu.get_cpu_capability()
        print(json.dumps({"kernels": capability, **figures(quick)}))
        return 0
    runs = {}
    for name in SETTINGS:
        start = time.time()
        runs[name] = run_setting(name, quick)
        print(f"{name}: PyTorch's kernels {runs[name].pop('kernels')}, "
              f"{time.time() - start:.0f} s", flush=True)
    names = list(runs)
    print(f"\n{'figure':70s} {'spread':>9s}  " + "  ".join(f"{n:>12s}" for n in names))
    for fig in runs[names[0]]:
        values = [runs[n][fig] for n in names]
        print(f"{fig:70s} {spread(fig, values):9.2e}  "
              + "  ".join(f"{v:12.7g}" for v in values))
    failed = []
    if not quick:  # the capstone report's check on each setting's six trained losses
        from tests.solutions.test_written_experiments import report_holds
        for name, run in runs.items():
            losses = {(int(f.split()[1][3:]), int(f.split()[2][5:])): v
                      for f, v in run.items() if f.startswith("tiny_gpt")}
            try:
                report_holds(losses)
                print(f"the capstone report holds on {name}'s losses")
            except AssertionError as e:
                failed.append(name)
                print(f"the capstone report FAILS on {name}'s losses: {e}")
    if "--no-tests" in argv:
        return 1 if failed else 0
    for name, (env, threads) in SETTINGS.items():
        env = {**os.environ, **env, "OMP_NUM_THREADS": str(threads),
               "MKL_NUM_THREADS": str(threads)}
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "-m", "not slow", *TESTS]  # (the slow one: its trainings, checked above)
        done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True,
                              check=False)
        summary = [line for line in done.stdout.splitlines() if " passed" in line or
                   " failed" in line][-1:]
        print(f"tests on {name}: {summary[0] if summary else done.stdout[-500:]}", flush=True)
        if done.returncode:
            failed.append(name)
            print(done.stdout[-4000:])
    print("every test held on every setting" if not failed else f"FAILED on: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
