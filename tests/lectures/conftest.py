"""Fixtures shared by the lecture toolkit's tests."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny models run many times faster on one thread than on two busy cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
