"""A control group per student's turn: the kernel bounds its memory and process count while it
runs, and ends all of its processes at once afterwards.

Every process the student's code starts (double-forked, setsid, a fork bomb) is born into the
group and cannot leave it (moving needs write access to cgroup files it cannot even see). The
memory limit counts what the process allocates and what it writes to /dev/shm or /tmp (tmpfs
pages are charged to their writer). At the end, the group is frozen (nothing can fork while we
kill), every member killed, then thawed and removed.

Works with cgroup v2 (memory.max, pids.max, cgroup.kill) or v1 (memory, pids and freezer
hierarchies). Needs write access to the hierarchy (root, or a delegated subtree); where there is
none, `available()` says why and the grader falls back to rlimits (and flags it).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
V1 = ("memory", "pids", "freezer")
_names = itertools.count(1)


def _own(controller: str | None) -> str:
    """This process's cgroup path for `controller` (None: the v2 hierarchy)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (controller is None and controllers == "") or controller in controllers.split(","):
            return path.lstrip("/")
    raise OSError(f"no {controller or 'v2'} cgroup for this process")


def _v2_base() -> Path | None:
    for mount in (ROOT, ROOT / "unified"):
        controllers = mount / "cgroup.controllers"
        if controllers.exists() and {"memory", "pids"} <= set(controllers.read_text().split()):
            return mount
    return None


class Cgroup:
    """One group: `add` the student's first process, `end` it and everything it started."""

    def __init__(self, memory_bytes: int, max_processes: int):
        name = f"grader-{os.getpid()}-{next(_names)}"
        self.v2 = _v2_base()
        self.dirs: dict[str, Path] = {}
        try:
            if self.v2 is not None:
                parent = self.v2 / _own(None)
                _write(parent / "cgroup.subtree_control", "+memory +pids", check=False)
                self.dirs["all"] = parent / name
            else:
                for controller in V1:
                    self.dirs[controller] = ROOT / controller / _own(controller) / name
            for path in self.dirs.values():
                path.mkdir()
            self._limit(memory_bytes, max_processes)
        except OSError:
            self.remove()
            raise

    def _dir(self, controller: str) -> Path:
        return self.dirs["all"] if "all" in self.dirs else self.dirs[controller]

    def _limit(self, memory_bytes: int, max_processes: int) -> None:
        if "all" in self.dirs:
            _write(self._dir("memory") / "memory.max", str(memory_bytes))
            _write(self._dir("memory") / "memory.swap.max", "0", check=False)
        else:
            _write(self._dir("memory") / "memory.limit_in_bytes", str(memory_bytes))
            _write(self._dir("memory") / "memory.memsw.limit_in_bytes", str(memory_bytes),
                   check=False)
        _write(self._dir("pids") / "pids.max", str(max_processes))

    def add(self, pid: int) -> None:
        for path in self.dirs.values():
            _write(path / "cgroup.procs", str(pid))

    def members(self) -> set[int]:
        pids = set()
        for path in self.dirs.values():
            with contextlib.suppress(OSError):
                pids |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
        return pids

    def oom_kills(self) -> int:
        """How many of the group's processes the kernel killed for memory."""
        if "all" in self.dirs:
            name, key = "memory.events", "oom_kill"
        else:
            name, key = "memory.oom_control", "oom_kill"
        with contextlib.suppress(OSError, ValueError):
            for line in (self._dir("memory") / name).read_text().splitlines():
                if line.startswith(key + " "):
                    return int(line.split()[1])
        return 0

    def tasks(self) -> int:
        """The processes and threads the group is charged for now (pids.current), which counts
        a zombie until its parent, or the subreaper it was handed to, reaps it."""
        with contextlib.suppress(OSError, ValueError):
            return int((self._dir("pids") / "pids.current").read_text())
        return 0

    def end(self) -> None:
        """Kill every process in the group, including those forking while we kill."""
        if "all" in self.dirs and (self.dirs["all"] / "cgroup.kill").exists():
            _write(self.dirs["all"] / "cgroup.kill", "1", check=False)
        else:
            freezer = self.dirs.get("freezer")
            if freezer is not None:
                _write(freezer / "freezer.state", "FROZEN", check=False)
            for attempt in range(50):
                members = self.members()
                if not members:
                    break
                for pid in members:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                if freezer is not None:
                    _write(freezer / "freezer.state", "THAWED", check=False)  # deliver kills
                time.sleep(0.001 * attempt)
        end = time.monotonic() + 5
        while self.members() and time.monotonic() < end:
            time.sleep(0.002)

    def remove(self) -> None:
        for path in self.dirs.values():
            with contextlib.suppress(OSError):
                path.rmdir()


def _write(path: Path, text: str, check: bool = True) -> None:
    try:
        path.write_text(text)
    except OSError:
        if check:
            raise


def available() -> str | None:
    """None when per-turn cgroups work here; otherwise why not."""
    try:
        group = Cgroup(2**30, 64)
    except OSError as e:
        return f"cannot create a cgroup ({e.strerror or e}: {getattr(e, 'filename', '')})"
    group.remove()
    return None


class NamedCgroup(Cgroup):
    """A long-lived group under a name of our choosing (a hub user's server, "HUB/USER"): the
    same memory and process bounds as a turn's, plus a CPU quota. Opening it again (the server
    restarted, the hub restarted) finds the same group and sets its limits anew."""

    def __init__(self, name: str, memory_bytes: int, max_processes: int,
                 cpus: float | None = None):
        self.v2 = _v2_base()
        self.dirs = {}
        if self.v2 is not None:
            path = self.v2 / _own(None)
            for part in name.split("/"):  # each level hands its children the controllers
                _write(path / "cgroup.subtree_control", "+memory +pids +cpu", check=False)
                path = path / part
                path.mkdir(exist_ok=True)
            self.dirs["all"] = path
        else:
            for controller in (*V1, "cpu"):
                self.dirs[controller] = ROOT / controller / _own(controller) / name
                self.dirs[controller].mkdir(parents=True, exist_ok=True)
        self._limit(memory_bytes, max_processes)
        if cpus:
            period = 100_000
            quota = str(max(1000, round(cpus * period)))
            if "all" in self.dirs:
                _write(self.dirs["all"] / "cpu.max", f"{quota} {period}")
            else:
                _write(self.dirs["cpu"] / "cpu.cfs_period_us", str(period))
                _write(self.dirs["cpu"] / "cpu.cfs_quota_us", quota)

    def end(self) -> None:
        """Kill every process in the group, and leave it open to the next server (a turn's
        group is removed after `end`, which may leave it frozen)."""
        super().end()
        if "freezer" in self.dirs:
            _write(self.dirs["freezer"] / "freezer.state", "THAWED", check=False)

    def limits(self) -> dict[str, str]:
        """What the kernel holds the group to, read back from its files."""
        if "all" in self.dirs:
            files = {"memory": "memory.max", "pids": "pids.max", "cpu": "cpu.max"}
            return {k: (self.dirs["all"] / f).read_text().strip() for k, f in files.items()}
        files = {"memory": "memory.limit_in_bytes", "pids": "pids.max",
                 "cpu": "cpu.cfs_quota_us"}
        return {k: (self.dirs[k] / f).read_text().strip() for k, f in files.items()}
