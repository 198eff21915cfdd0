"""Fixtures for the tests of the reference package `solutions`."""

import sys
from pathlib import Path

import pytest
import torch

# pytest's default (prepend) imports put tests/ on sys.path, where this folder, tests/solutions,
# would be found as a namespace package named `solutions` before the editable install's finder
# is asked. Put the repository first so `import solutions` is the real package.
REPO = Path(__file__).resolve().parents[2]
if sys.path[:1] != [str(REPO)]:
    sys.path.insert(0, str(REPO))
if "solutions" in sys.modules and getattr(sys.modules["solutions"], "__file__", None) is None:
    del sys.modules["solutions"]  # the namespace package, imported by mistake before we ran

CUDA = torch.cuda.is_available()
DEVICES = ["cpu"] + (["cuda"] if CUDA else [])


@pytest.fixture(autouse=True)
def _seed():
    """Module initialisation draws from the global generator: make every test repeatable."""
    torch.manual_seed(0)


@pytest.fixture
def gen():
    """A seeded CPU generator for test inputs (draw on CPU, then move to the device)."""
    return torch.Generator().manual_seed(1234)


@pytest.fixture
def devices():
    return list(DEVICES)


@pytest.fixture(params=[
    "cpu",
    pytest.param("cuda", marks=[
        pytest.mark.cuda,
        pytest.mark.skipif(not CUDA, reason="needs a CUDA device"),
    ]),
])
def device(request):
    """Each test that takes it runs on CPU, and on CUDA when there is one."""
    return torch.device(request.param)
