"""A clean, pre-imported process that forks one worker per notebook.

Importing torch costs seconds of CPU; this process pays it once per grading run and then forks
(milliseconds). It never runs student code itself. Protocol, over a Unix socket: the grader sends
a JSON request, with the worker's end of a socket pair attached for "fork"; the answer is JSON.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

PRELOAD = ("torch", "torch.nn", "torch.nn.functional", "numpy",
           "IPython.core.interactiveshell", "grader.checks", "grader.sandbox.worker")


def _reap(statuses: dict) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = os.waitstatus_to_exitcode(status)


def _fork(config: dict, fd: int, server: socket.socket) -> int:
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            from multiprocessing.connection import Connection

            from grader.sandbox.worker import main

            main(Connection(fd), config)
        finally:
            os._exit(0)
    os.close(fd)
    return pid


def serve(sock: socket.socket) -> None:
    statuses: dict[int, int] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 1)
        except OSError:
            return
        if not data:
            return  # the grader is gone
        request = json.loads(data)
        _reap(statuses)
        if request["op"] == "fork":
            answer = {"pid": _fork(request["config"], fds[0], sock)}
        else:  # status
            pid = request["pid"]
            answer = {"code": statuses.pop(pid, None)}
        sock.sendall(json.dumps(answer).encode() + b"\n")


def warm_up() -> None:
    """Run the kinds of operations notebooks use once, here: PyTorch sets up each operator on
    first use (dispatch tables, kernels), and every forked worker inherits that work."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    for dtype in (torch.float32, torch.float64):
        x = torch.randn(2, 3, 4, 4, dtype=dtype, requires_grad=True)
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        att = torch.softmax((x @ x.transpose(-2, -1)).masked_fill(~mask, float("-inf")), -1)
        y = F.layer_norm(att @ x, (4,)) + F.gelu(x).tanh() * x.exp().sqrt().log1p()
        layer = nn.Linear(4, 4).to(dtype)
        emb = nn.Embedding(5, 4).to(dtype)
        (layer(y).sum() + emb(torch.tensor([1, 2])).sum() + x.mean().abs()
         + F.cross_entropy(y.reshape(-1, 4), torch.zeros(24, dtype=torch.long))).backward()
        torch.allclose(x, x), torch.equal(x, x), x.detach().clone().view(-1).numpy()
    # The meta device (tests use it to check device= handling) imports PyTorch's whole
    # symbolic-shape machinery on first use: about a second, paid here once.
    m = torch.ones(3, 3, dtype=torch.bool, device="meta").tril()
    torch.zeros(3, 4, device="meta")[:, 0::2].sin(), m.to(torch.float32) @ m.to(torch.float32)


def main() -> None:
    for name in PRELOAD:
        __import__(name)
    import torch

    # One thread per student process: submissions run side by side, and tiny tensors gain
    # nothing from a thread pool (whose spinning threads would burn the other cores).
    torch.set_num_threads(1)
    warm_up()
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.sendall(b'{"ready": true}\n')
    serve(sock)


if __name__ == "__main__":
    main()
