"""Everything that needs a CUDA device, in one run (CI has none, so all of it skips there).

1. The tests marked `cuda` (`pytest -m cuda`): each reference module on the GPU against the
   CPU, and against PyTorch's own modules on the device; and the grader's device check (its
   verdicts on meta tensors) against what CUDA does with the same code.
2. The lectures' GPU cells: each lecture with a code cell that uses CUDA is executed whole, the
   way `make lectures` does (figure checks included), and those cells' outputs are printed.

Usage, from the repository root: `python tests/cuda_checks.py [OUTDIR]` (default build/cuda).
The executed lectures and the tests' JUnit report are written to OUTDIR. Exit status 0 only when
a CUDA device was found and every test and every lecture passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "lectures"))

from toolkit.execute import execute, gpu_cells  # noqa: E402  (lectures/ is not a package)


def describe_device() -> bool:
    print(f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}")
    if not torch.cuda.is_available():
        return False
    props = torch.cuda.get_device_properties(0)
    print(f"device 0: {props.name}, {props.total_memory / 2**30:.0f} GiB, "
          f"{props.multi_processor_count} multiprocessors, CUDA {torch.version.cuda}")
    return True


def run_tests(out: Path) -> int:
    # --confcutdir: tests/conftest.py counts autograde runs through nbgrader, which a GPU
    # machine with only PyTorch need not have; the cuda tests use tests/solutions' fixtures alone.
    # The device check's tests (grader/checks/devices.py) need no fixtures: --noconftest keeps
    # tests/grader's, which releases assignments through nbgrader, out.
    base = [sys.executable, "-m", "pytest", "-m", "cuda", "-p", "no:cacheprovider", "-q", "-rA"]
    runs = [[*base, "--confcutdir=tests/solutions", f"--junitxml={out / 'cuda-tests.xml'}",
             "tests/solutions"],
            [*base, "--noconftest", f"--junitxml={out / 'cuda-device-check.xml'}",
             "tests/grader/checks/test_device_check.py",
             "tests/catalogue/test_device_check_gpu.py"]]
    rc = 0
    for cmd in runs:
        print("$", " ".join(cmd), flush=True)
        rc = rc or subprocess.call(cmd, cwd=REPO)
    return rc


def kernel_path(pythonpath: str | None) -> str:
    """PYTHONPATH for the lectures' kernels: what it was, then the repository. `make` installs
    the `solutions` package into .venv, but a GPU machine with its own PyTorch has it only as a
    folder here, and every lecture's kernel (started in lectures/) imports it."""
    return os.pathsep.join([*filter(None, [pythonpath]), str(REPO)])


def run_lectures(out: Path) -> int:
    os.environ["PYTHONPATH"] = kernel_path(os.environ.get("PYTHONPATH"))  # kernels inherit it
    failed = 0
    for path in sorted((REPO / "lectures").glob("*.ipynb")):
        if not gpu_cells(nbformat.read(path, as_version=4)):
            continue
        start = time.perf_counter()
        try:
            nb, seconds = execute(path)
        except Exception as err:  # nbclient's CellExecutionError names the cell and the error
            failed += 1
            print(f"{path.name}: FAILED after {time.perf_counter() - start:.0f} s\n{err}")
            continue
        (out / path.name).write_text(nbformat.writes(nb), encoding="utf-8")
        print(f"{path.name}: executed in {seconds:.0f} s")
        for cell in gpu_cells(nb):
            print(f"--- cell {cell.id} printed:")
            for output in cell.outputs:
                print(output.get("text", "").rstrip() or f"({output.output_type} output)")
    return failed


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "build" / "cuda").resolve()
    out.mkdir(parents=True, exist_ok=True)
    has_cuda = describe_device()
    tests_rc = run_tests(out)
    lectures_failed = run_lectures(out)
    print(f"cuda tests: exit status {tests_rc}; lectures with GPU cells failed: {lectures_failed}")
    if not has_cuda:
        print("no CUDA device: the tests skipped and the GPU cells did nothing")
        return 1
    return int(tests_rc != 0 or lectures_failed != 0)


if __name__ == "__main__":
    sys.exit(main())
