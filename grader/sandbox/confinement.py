"""How students' processes are isolated on this machine: what the sandbox can be here
(bubblewrap's namespaces, namespaces.py; a cgroup per turn, cgroup.py), worked out once per
process and refused when the sandbox cannot be built unless the instructor asked to grade
without it."""

from __future__ import annotations

from dataclasses import dataclass

from grader.sandbox import cgroup, namespaces
from grader.submission import Flag, flag


@dataclass(frozen=True)
class Confinement:
    """How students' processes are isolated on this machine (see namespaces.py, cgroup.py)."""

    sandboxed: bool  # inside bubblewrap's namespaces, as an unprivileged user
    cgroups: bool  # memory and process count bounded by a cgroup per turn (else rlimits)
    why_not: str = ""  # what is missing, in words

    def describe(self) -> str:
        where = namespaces.describe() if self.sandboxed else f"NONE ({self.why_not})"
        limits = ("a cgroup per student (memory incl. /dev/shm, process count)" if self.cgroups
                  else "rlimits (no writable cgroup hierarchy)")
        return f"{where}; limits: {limits}; Landlock as a second layer where the kernel has it"

    def flags(self) -> list[Flag]:
        """The flags every submission graded under this confinement carries (the instructor's
        choice to grade without the sandbox: each grade it gave is to be read with it)."""
        out = []
        if not self.sandboxed:
            out.append(flag("unconfined", "graded WITHOUT the sandbox (--unconfined): "
                            + self.why_not))
        return out

    def conditions(self) -> list[str]:
        """The machine's conditions a run graded under: the same for every student, so said
        once (the run's banner, the status file's run, the class report), not per student."""
        out = []
        if not self.cgroups:
            out.append("memory and process limits were rlimits, not a cgroup (no writable "
                       "cgroup hierarchy here)")
        return out


_found: dict[bool, Confinement] = {}  # confinement(unconfined)'s answers in this process
# The option that grades without the sandbox, and the commands of `python -m grader` that take
# it: the advice given where the sandbox cannot be built names both (tests/grader/sandbox/
# test_advice.py parses it with those commands' parsers).
UNCONFINED = "--unconfined"
TAKEN_BY = ("autograde", "demo")


def confinement(unconfined: bool = False) -> Confinement:
    """The isolation this machine gives; raises IsolationUnavailable when the sandbox cannot
    be built, unless the instructor asked to grade `unconfined` anyway. Worked out once per
    process (namespaces.probe starts a sandboxed interpreter), or taken over (`adopt`)."""
    found = _found.get(unconfined)
    if found is None:
        why = namespaces.probe()
        if why and not unconfined:
            commands = " or ".join(f"`python -m grader {c}`" for c in TAKEN_BY)
            raise namespaces.IsolationUnavailable(
                f"cannot isolate students' code here: {why}. Fix that, or, for code you trust, "
                f"pass {UNCONFINED} (to {commands}) to grade without isolation (every "
                "submission is then flagged 'unconfined')")
        found = _found[unconfined] = Confinement(
            sandboxed=not why and not unconfined, cgroups=cgroup.available() is None,
            why_not=why or ("the instructor asked for it" if unconfined else ""))
    return found


def adopt(unconfined: bool, found: Confinement) -> None:
    """Take `found` as this process's confinement(unconfined): what the process that started
    it found on this machine moments before (a grading pool's processes take the command's
    rather than each starting a sandboxed interpreter to probe again)."""
    _found[unconfined] = found
