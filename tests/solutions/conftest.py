"""Fixtures for the tests of the reference package `solutions`."""

import pytest
import torch

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


def _train_losses(params, loss_fn, steps: int = 40, lr: float = 1e-2) -> list[float]:
    opt = torch.optim.Adam(params, lr=lr)
    losses = []
    for _ in range(steps):
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.fixture
def train_losses():
    """train_losses(params, loss_fn) -> the losses of a few dozen Adam steps on a fixed batch."""
    return _train_losses
