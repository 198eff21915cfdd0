"""The sandbox's IPC objects, removed between two students.

Students graded one after another by the same grading process share one sandbox, and so one
IPC namespace (a worker cannot be given one of its own: that needs CAP_SYS_ADMIN, which nothing
in the sandbox has). A System V shared memory segment, message queue or semaphore set, or a
POSIX message queue, outlives the process that made it; left there it would carry data from one
student to the next. The sandbox's server runs as the same user as its students, so it may
remove every one of them (IPC_RMID needs only that); it does so after each turn, once every
process of the turn is gone. POSIX shared memory and named semaphores are files in /dev/shm,
emptied with the other writable folders.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

SYSV = ("shm", "msg", "sem")  # /proc/sysvipc/<kind>: every object of this IPC namespace
_IPC_RMID = 0


def sysv_ids(kind: str) -> list[int]:
    """The ids of this IPC namespace's System V objects of one kind."""
    with open(f"/proc/sysvipc/{kind}") as f:
        lines = f.read().splitlines()[1:]  # after the header
    return [int(line.split()[1]) for line in lines if line.strip()]


def remove(mqueue: str) -> list[str]:
    """Remove every System V object of this IPC namespace and every POSIX message queue (the
    files under `mqueue`, where the namespace's queues are mounted); what is left, in words
    (empty: all gone)."""
    libc = ctypes.CDLL(None, use_errno=True)
    control = {"shm": lambda i: libc.shmctl(i, _IPC_RMID, None),
               "msg": lambda i: libc.msgctl(i, _IPC_RMID, None),
               "sem": lambda i: libc.semctl(i, 0, _IPC_RMID)}
    left = []
    for kind in SYSV:
        try:
            for ident in sysv_ids(kind):
                control[kind](ident)  # (an object already gone fails: counted below)
            remaining = sysv_ids(kind)
        except (OSError, ValueError, IndexError) as e:
            left.append(f"System V {kind}: not readable ({e})")
            continue
        if remaining:
            left.append(f"System V {kind}: {len(remaining)} left")
    try:
        for name in os.listdir(mqueue):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(mqueue, name))
        if os.listdir(mqueue):
            left.append(f"POSIX message queues: {len(os.listdir(mqueue))} left")
    except OSError as e:
        left.append(f"POSIX message queues: {e}")
    return left
