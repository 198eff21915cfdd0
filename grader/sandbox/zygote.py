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


def main() -> None:
    for name in PRELOAD:
        __import__(name)
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.sendall(b'{"ready": true}\n')
    serve(sock)


if __name__ == "__main__":
    main()
