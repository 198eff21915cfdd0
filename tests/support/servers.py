"""Servers the tests start on loopback: free ports for them, and the wait for one to answer."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports: every socket stays bound until all are picked (one
    at a time, the kernel may hand out the same port twice, and the hub's proxy then served
    its own API port as a route: JupyterHub stopped on a 404 from /api/routes)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


def wait_for(url: str, seconds: float, proc: subprocess.Popen, log: Path,
             what: str = "the server") -> None:
    """Until URL answers 200. Fails at once, with the end of LOG, where PROC has exited, and
    after SECONDS where it never answered."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited ({proc.returncode}):\n"
                                 f"{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{what} did not answer {url} in {seconds} s:\n"
                         f"{log.read_text()[-4000:]}")


def stop(procs: list[subprocess.Popen], seconds: float) -> None:
    """Ask each process to end (SIGTERM, in the order given), then wait up to SECONDS for each;
    one still running then is killed."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
