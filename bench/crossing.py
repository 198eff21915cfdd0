"""Benchmark: one crossing between the grader and a student's process, CPU on each side.

A test calls a student's function about 130 times a notebook (self_attention's tests), and each
call crosses to the student's process and back: the judge encodes the inputs and waits, the
student's process decodes them, runs the code with PyTorch's built-ins switched off and its
devices watched, and encodes the value. This times that round trip against its floor in the
same run: two processes sending a message of the same size back and forth over a socket
(multiprocessing's Connection, as the grader's), with nothing done on either side.

Everything runs on one core (the sandbox's processes inherit this process's affinity): a
crossing between two cores adds wake-ups whose cost moves with the machine's load by more than
the grader's own work. Each figure is the least of `--repeats` passes of `--calls` crossings,
the median in brackets, in microseconds of CPU per crossing.

With `--spread`, the same again with both sides free to run on any core, as a judge and its
student's process would be if grader.pipeline.pools did not keep each pair to one core.

    .venv/bin/python bench/crossing.py [--calls N] [--repeats R] [--spread]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from multiprocessing.connection import Connection

import torch

from grader.nbgrader.config import setup_process

PING = "request alone (ping)"
CALL = "call, two (2, 4, 8) tensors"

SOURCE = """
import torch

def scores(q, k):
    return q @ k.transpose(-2, -1)
"""


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """The two (2, 4, 8) tensors every crossing's call is given."""
    return torch.randn(2, 4, 8, dtype=torch.float64), torch.randn(2, 4, 8, dtype=torch.float64)


def bare_round_trips(size: int, calls: int, repeats: int) -> list[tuple[float, float]]:
    """(CPU of this side, CPU of the other) per round trip of `size` bytes each way: a forked
    process that only echoes."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the echo: reports its own CPU when asked
        ours.close()
        conn = Connection(theirs.detach())
        while (data := conn.recv_bytes()) != b"q":
            conn.send_bytes(str(time.process_time()).encode() if data == b"t" else data)
        os._exit(0)
    theirs.close()
    conn, message = Connection(ours.detach()), b"x" * size

    def other_cpu() -> float:
        conn.send_bytes(b"t")
        return float(conn.recv_bytes())

    runs = []
    for _ in range(repeats):
        mine, other = time.process_time(), other_cpu()
        for _ in range(calls):
            conn.send_bytes(message)
            conn.recv_bytes()
        runs.append(((time.process_time() - mine) / calls, (other_cpu() - other) / calls))
    conn.send_bytes(b"q")
    os.waitpid(pid, 0)
    return runs


def crossings(calls: int, repeats: int,
              only: tuple[str, ...] = ()) -> tuple[dict[str, list[tuple[float, float]]], int]:
    """{kind of crossing: [(judge CPU, student CPU) per crossing, one per pass]} (every kind, or
    those named in `only`), and the size of a call's message."""
    from grader.judge.remote import Link
    from grader.sandbox import codec, forbidden, proc, session
    from grader.sandbox.confinement import confinement
    from grader.sandbox.launcher import zygote
    from grader.submission import Limits

    confined = confinement()
    z = zygote(confined)
    s = session.Session({}, Limits(), True, confined)
    s.start()
    link = Link(s)
    s.request({"op": "run", "source": SOURCE})
    scores = link.get("scores")
    q, k = inputs()

    def call():
        scores(q, k)

    def call_switched_off():
        with forbidden.announced(forbidden.SOFTMAX):
            scores(q, k)

    q_grad, k_grad = q.clone().requires_grad_(), k.clone().requires_grad_()

    def call_as_tests_do():  # run_student's inputs require gradients (an autograd node here)
        with forbidden.announced(forbidden.SOFTMAX):
            scores(q_grad, k_grad)

    kinds = {PING: lambda: s.request({"op": "ping"}),
             CALL: call,
             "the same, built-ins switched off": call_switched_off,
             "the same, inputs requiring gradients": call_as_tests_do}
    kinds = {name: fn for name, fn in kinds.items() if not only or name in only}
    size = len(codec.dumps({"op": "call", "ref": {"T": "ref", "id": 1, "type": "", "repr": ""},
                            "args": [codec.encode(t, None) for t in (q, k)], "kwargs": {},
                            "forbidden": None}))
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
    try:
        for _ in range(repeats):  # the kinds in turn: a slow spell hits each
            for name, fn in kinds.items():
                for _ in range(calls // 10):  # settle
                    fn()
                judge, student = time.process_time(), proc.cpu_seconds(s.host_pid)
                for _ in range(calls):
                    fn()
                runs[name].append(((time.process_time() - judge) / calls,
                                   (proc.cpu_seconds(s.host_pid) - student) / calls))
    finally:
        s.close()
        z.stop()
    return runs, size


def function_alone(calls: int, repeats: int) -> float:
    """CPU seconds of one call of the crossings' function, run here in a loop (the least of
    `repeats` passes): the part of a call's crossing that is the student's code."""
    names: dict = {}
    exec(SOURCE, names)
    scores, (q, k) = names["scores"], inputs()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            scores(q, k)
        best = min(best, (time.process_time() - start) / calls)
    return best


def us(runs: list[float]) -> str:
    return f"{1e6 * min(runs):6.0f} ({1e6 * statistics.median(runs):.0f})"


def table(calls: int, repeats: int, where: str) -> dict[str, float]:
    """Time the crossings and the bare round trip where this process stands now, print them;
    the least CPU per crossing of each kind, both sides together."""
    runs, size = crossings(calls, repeats)
    bare = bare_round_trips(size, calls, repeats)
    print(f"CPU per crossing, us, least of {repeats} passes of {calls} (median), {where}:")
    print(f"  {'':<36} {'judge':>14} {'student':>14} {'both':>14}")
    rows = {f"bare round trip, {size} bytes each way": bare, **runs}
    for name, pairs in rows.items():
        print(f"  {name:<36} {us([a for a, _ in pairs]):>14} {us([b for _, b in pairs]):>14} "
              f"{us([a + b for a, b in pairs]):>14}")
    floor = min(a + b for a, b in bare)
    for name, pairs in runs.items():
        print(f"  {name}: {min(a + b for a, b in pairs) / floor:.1f} x the bare round trip")
    return {name: min(a + b for a, b in pairs) for name, pairs in rows.items()}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--spread", action="store_true",
                   help="also on every core this process may use: each side where the "
                        "scheduler puts it, as when nothing pins them (grader.pipeline.pools."
                        "worker_cpu pins them)")
    args = p.parse_args(argv)
    setup_process()
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    torch.set_num_threads(1)
    one = table(args.calls, args.repeats, "on one core")
    if args.spread and len(cores) > 1:
        os.sched_setaffinity(0, cores)
        spread = table(args.calls, args.repeats, f"spread over {len(cores)} cores")
        for name, least in one.items():
            print(f"  {name}: {spread[name] / least:.2f} x on one core")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1:]))
