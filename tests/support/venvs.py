"""A throwaway venv for packaging tests: .venv's third-party packages without the course."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path


def borrowing_venv(venv: Path) -> tuple[Path, Path]:
    """A venv at `venv` that sees .venv's third-party packages, but not .venv's .pth files
    (the editable install of the whole course, solutions included, is hooked in there).
    Returns (its python, its site-packages)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "borrowed.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python, Path(site)
