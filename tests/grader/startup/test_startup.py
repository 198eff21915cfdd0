"""Start-up is paid once per grading command (issue "grade near the physical limit").

What each process of a grading run imports is structural, so it is tested here; how many
seconds it costs is measured by bench/autograde_class.py, never in a timed test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from tests.support.classes import write_submission
from tests.support.processes import interpreters_at_once


def _fresh_all(*codes: str) -> list[str]:
    """What each code prints in a fresh interpreter, all started at once."""
    done = interpreters_at_once(*codes)
    for run in done:
        run.check_returncode()
    return [run.stdout.strip() for run in done]


def _fresh(code: str) -> str:
    return _fresh_all(code)[0]


def test_the_grading_command_never_imports_torch():
    # The command sanitizes and records; torch is imported by the pool and the sandbox only.
    loaded = _fresh(
        "import json, sys\n"
        "import grader.cli, grader.pipeline.autograde, grader.pipeline.sanitize\n"
        "import grader.intake, grader.outputs.export\n"
        "import grader.nbgrader.execute, grader.sandbox.session\n"
        "print(json.dumps([m for m in ('torch', 'grader.judge.notebook') if m in sys.modules]))")
    assert json.loads(loaded) == []


def test_the_command_starts_the_fork_server_before_importing_nbformat():
    # What `autograde` imports before it starts the fork server delays the server's torch, and
    # with it the sandboxes, which start once the server is done (grader.pipeline.pools): nbformat
    # and its schema validator (70 ms) come after.
    loaded = _fresh(
        "import json, sys\n"
        "import grader.cli\n"
        "from grader.pipeline.pools import preload_for, start_fork_server\n"
        "print(json.dumps([m for m in ('nbformat', 'jsonschema') if m in sys.modules]))")
    assert json.loads(loaded) == []


def test_the_pool_never_imports_nbgrader():
    # What pool processes are forked from: torch and the judge, not nbgrader's server extensions.
    loaded = _fresh(
        "import json, sys\n"
        "from grader.pipeline.pools import PRELOAD\n"
        "for name in PRELOAD:\n    __import__(name)\n"
        "print(json.dumps([m for m in ('nbgrader', 'nbconvert', 'jupyter_client') "
        "if m in sys.modules]))")
    assert json.loads(loaded) == []


def test_notebooks_validate_without_the_optional_format_packages():
    # grader/startup/formats.py keeps jsonschema's optional format packages (the IRI grammar
    # among them) out of the grader's processes; nbformat must still validate, and still
    # refuse, notebooks.
    out = _fresh(
        "from grader.startup import formats\nformats.leave_out()\nimport nbformat, sys\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "nb.cells[0]['cell_type'] = 'nonsense'\n"
        "try:\n    nbformat.validate(nb)\nexcept nbformat.ValidationError:\n    print('refused')\n"
        "print(sorted(n for n in ('rfc3987_syntax', 'isoduration', 'arrow', 'rfc3986_validator',"
        " 'rfc3339_validator', 'webcolors', 'uri_template', 'fqdn') if sys.modules.get(n)))")
    assert out.splitlines() == ["refused", "[]"]


def test_importing_grader_runs_nothing():
    # A student's kernel and a Jupyter server import grader (grader.checks, the server
    # extensions): importing the package must leave the process as it was, with every
    # package importable.
    out = _fresh(
        "import sys\nbefore = dict(sys.modules)\nimport grader\n"
        "print(sorted(n for n in set(sys.modules) - set(before) if n != 'grader'),"
        " [n for n, m in sys.modules.items() if m is None])")
    assert out.strip() == "[] []"


def test_the_grading_commands_and_the_pool_leave_the_format_packages_out():
    # Each entry point that reads notebooks in bulk calls formats.leave_out: a command of the
    # CLI (every one but lab and hub, which run Jupyter's servers) and the pool's fork server.
    from grader.startup.formats import PACKAGES

    left_out = "print(sorted(n for n, m in sys.modules.items() if m is None))"
    command, pool, imported = _fresh_all(
        "import sys\nfrom grader import cli\ncli.main(['check', '/no/such.ipynb'])\n" + left_out,
        "import sys\nimport grader.startup.warming\n" + left_out,
        "import sys\nfrom grader import cli\n" + left_out)  # imported: nothing runs
    assert set(json.loads(command.splitlines()[-1].replace("'", '"'))) == set(PACKAGES)
    assert set(json.loads(pool.replace("'", '"'))) == set(PACKAGES)
    assert json.loads(imported.replace("'", '"')) == []


def _meet_the_other_pool_process(meeting: str) -> None:
    """Return once two pool processes have each come here (pids, files in `meeting`): one that
    waits here takes no other call, so each of a two-process pool takes exactly one."""
    import os
    import time
    from pathlib import Path

    folder, gave_up = Path(meeting), Path(meeting) / "gave up"
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len([p for p in folder.iterdir() if p.name.isdigit()]) < 2:
        if gave_up.exists() or time.monotonic() > deadline:
            gave_up.touch()  # the call still queued for this process fails at once, too
            raise TimeoutError(f"pool process {os.getpid()} waited 60 s for another one to "
                               "take the other call (one call each expected)")
        time.sleep(0.01)


def _one_call_each(pool, probe, *args) -> list:
    """probe(meeting, *args)'s answers from each of the two processes of `pool` (probe calls
    _meet_the_other_pool_process(meeting))."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as meeting:
        calls = [pool.pool.submit(probe, meeting, *args) for _ in range(2)]
        return [c.result(120) for c in calls]


def _parent_and_torch(meeting):
    import os
    from pathlib import Path

    _meet_the_other_pool_process(meeting)
    parent = os.getppid()
    maps = Path(f"/proc/{parent}/maps").read_text()
    return os.getpid(), parent, "libtorch_cpu" in maps


def test_pool_processes_are_forked_from_one_server_that_imported_torch():
    import os

    from grader.pipeline.pools import LocalPool

    pool = LocalPool(2)
    try:
        seen = {pid: (parent, loaded)
                for pid, parent, loaded in _one_call_each(pool, _parent_and_torch)}
    finally:
        pool.close()
    assert len(seen) == 2
    parents = {parent for parent, _ in seen.values()}
    assert len(parents) == 1 and os.getpid() not in parents  # one fork server, not us
    assert all(loaded for _, loaded in seen.values())  # torch was in it before it forked them


def _sandbox_of_this_process(meeting):
    import os

    from grader.sandbox import launcher, proc

    _meet_the_other_pool_process(meeting)
    return os.getpid(), [(z.running, proc.stat(z.pid)[0], z.pid)
                         for z in launcher._zygotes.values()]


def test_pool_processes_start_their_sandboxes_before_any_task():
    # Start-up overlaps with the command's own work (stage 1): the sandbox servers are
    # launched by a thread of the pool (those beyond the cores left free once the fork server
    # has finished its imports), each taken by one of the pool's processes before the first
    # notebook arrives, and each still running once that thread has done its work (bwrap ends
    # a sandbox when the thread that started it ends).
    import os
    import time

    from grader.pipeline.pools import LocalPool

    pool = LocalPool(2)
    try:
        deadline = time.monotonic() + 120
        while len(pool.pool._processes or {}) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pool.pool._processes) == 2  # nothing was submitted to it
        seen = dict(_one_call_each(pool, _sandbox_of_this_process))
    finally:
        pool.close()
    assert len(seen) == 2
    assert all(len(sandboxes) == 1 for sandboxes in seen.values()), seen  # one sandbox each
    (running, launcher, one), = seen.popitem()[1]
    (running_too, launcher_too, other), = seen.popitem()[1]
    assert running and running_too and one != other
    assert launcher == launcher_too == os.getpid()  # launched here, by the command


def _cores_of_this_pair(meeting):
    """The cores this pool process, its sandbox server and a student's process it starts may
    run on."""
    import os

    from grader.sandbox import launcher, session

    _meet_the_other_pool_process(meeting)
    (z,) = launcher._zygotes.values()
    student = session.Session({}, session.Limits(), True, z.confined)
    try:
        student.start()
        return [os.sched_getaffinity(0), os.sched_getaffinity(z.host_pid),
                os.sched_getaffinity(student.host_pid)]
    finally:
        student.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_each_judge_keeps_to_one_core_with_its_students_processes():
    # A test's calls go back and forth between the judge (a pool process) and the student's
    # process; on one core each call costs less CPU (bench/crossing.py --spread). Each pair has
    # a core of its own, and the command itself is left free.
    before = os.sched_getaffinity(0)
    pairs = _ask_each_pool_process(_cores_of_this_pair)
    assert all(len(cores) == 1 and cores == pair[0] for pair in pairs for cores in pair), pairs
    assert pairs[0][0] != pairs[1][0], pairs
    assert os.sched_getaffinity(0) == before


def test_sandboxes_start_at_once_only_on_cores_left_free(monkeypatch):
    # The command and the fork server each keep a core busy while a pool is made; a sandbox
    # server started besides them on a core of theirs makes the start-ups take turns.
    from grader.pipeline import pools as parallel

    for cores, workers, at_once in [(1, 1, 0), (2, 2, 0), (3, 3, 1), (4, 2, 2), (8, 8, 6)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert parallel.sandboxes_at_once(workers) == at_once, (cores, workers)


def test_the_other_sandboxes_start_once_the_fork_server_has_finished_its_imports(tmp_path):
    # The first of two sandbox servers starts at once, the second only once the fork server's
    # imports are done: here a module that takes two seconds and leaves a mark as it ends. The
    # command waits for neither: it goes on preparing the notebooks meanwhile.
    (tmp_path / "slow_preload.py").write_text(
        "import pathlib, time\n"
        "time.sleep(2)\n"
        f"pathlib.Path({str(tmp_path / 'imported')!r}).write_text('done')\n")
    out = _fresh(
        "import json, os\n"
        f"os.environ['PYTHONPATH'] = {str(tmp_path)!r}  # the fork server's path\n"
        "from grader.pipeline import pools as parallel\n"
        "from grader.sandbox import launcher\n"
        "real, seen = launcher.launch, []\n"
        "def launch(*args, **kwargs):\n"
        f"    seen.append(os.path.exists({str(tmp_path / 'imported')!r}))\n"
        "    return real(*args, **kwargs)\n"
        "launcher.launch = launch\n"
        "parallel.sandboxes_at_once = lambda workers: 1\n"
        "pool = parallel.LocalPool(2, preload=['slow_preload'])\n"
        f"made = os.path.exists({str(tmp_path / 'imported')!r})\n"
        "pool.close()\n"
        "print(json.dumps([made, seen]))")
    assert json.loads(out) == [False, [False, True]]


def test_waiting_for_the_fork_server_gives_up_after_its_time(tmp_path):
    # A fork server that never finishes its imports delays the pool by the time given, no more.
    (tmp_path / "stuck_preload.py").write_text("import time\ntime.sleep(600)\n")
    out = _fresh(
        "import os, time\n"
        f"os.environ['PYTHONPATH'] = {str(tmp_path)!r}  # the fork server's path\n"
        "from grader.pipeline import pools as parallel\n"
        "start = time.monotonic()\n"
        "ready = parallel.fork_server_ready(parallel._context(['stuck_preload']), 1.0)\n"
        "print(ready, round(time.monotonic() - start))\n"
        "import signal\n"
        "from multiprocessing import forkserver\n"
        "os.kill(forkserver._forkserver._forkserver_pid, signal.SIGKILL)\n"
        "os._exit(0)")
    assert out.split() == ["False", "1"]


def test_the_fork_server_starts_importing_torch_before_any_pool_exists():
    # `autograde` on a pool starts the fork server first thing, so that its torch import
    # overlaps with the command's own imports and stage 1. (The fork server, killed once seen,
    # would hold our stdout open until the end of its import: seconds of waiting.)
    out = _fresh(
        "import os, signal, sys, time\n"
        "from multiprocessing import forkserver\n"
        "from grader.pipeline.pools import start_fork_server\n"
        "start_fork_server()\n"
        "pid = forkserver._forkserver._forkserver_pid\n"
        "end = time.monotonic() + 120\n"
        "while time.monotonic() < end:\n"
        "    if 'libtorch_cpu' in open(f'/proc/{pid}/maps').read():\n"
        "        print('torch in the fork server'); break\n"
        "    time.sleep(0.05)\n"
        "print('torch here' if 'torch' in sys.modules else 'no torch here')\n"
        "os.kill(pid, signal.SIGKILL)")
    assert out.splitlines() == ["torch in the fork server", "no torch here"]


def test_a_new_students_process_is_found_without_scanning_proc(monkeypatch):
    # Each student's turn asks which host pid the sandbox's new process has: it is a child of
    # the sandbox's server, found from the kernel's list of children; scanning every process
    # of the machine is only the fallback, for a process further down.
    from grader.sandbox import proc, session

    scans = []
    real = proc.descendants
    monkeypatch.setattr(proc, "descendants", lambda pid: scans.append(pid) or real(pid))
    s = session.Session({}, session.Limits(cell_timeout=5, notebook_timeout=60))
    s.start()
    try:
        assert s.request({"op": "ping"})["value"] == s.pid
        assert s.host_pid in proc._children(session.zygote(s.confined).host_pid)
    finally:
        s.close()
    assert scans == []


# An exit handler registered first runs last: it runs only if the process tears itself down.
_TEARDOWN = "import atexit\natexit.register(lambda: print('teardown ran', flush=True))\n"


def test_the_fork_server_ends_without_tearing_torch_down():
    # Tearing down an interpreter that loaded torch costs most of a second of CPU, at the end of
    # every grading run: the fork server's exit handlers stop at the one its preload registers.
    assert _fresh(_TEARDOWN + "import grader.startup.warmed\nprint('served')") == "served"


def test_a_sandbox_server_ends_without_tearing_torch_down():
    import socket

    ours, theirs = socket.socketpair()
    setup = json.dumps({"sandboxed": False, "empty": []})
    code = _TEARDOWN + "from grader.sandbox.zygote import main\nmain()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), setup],
                            pass_fds=[theirs.fileno()], stdout=subprocess.PIPE, text=True)
    theirs.close()
    with ours.makefile("rb") as answers:
        assert json.loads(answers.readline())["ready"] is True
    ours.close()  # the grader is gone: the server ends
    out, _ = proc.communicate(timeout=60)
    assert (proc.returncode, out.strip()) == (0, "")


# A driver for grader.cli.run: main() is replaced by the code given (its body); an object that
# says so when the interpreter is torn down is left behind, as torch's modules are.
_COMMAND = """
import atexit, os, sys
import grader.cli


class Witness:
    write, fd = os.write, sys.stdout.fileno()

    def __del__(self):
        self.write(self.fd, b"torn down\\n")


witness = Witness()


def main(argv=None):
{body}


grader.cli.main = main
grader.cli.run()
"""


def _command(body: str) -> subprocess.CompletedProcess:
    code = _COMMAND.format(body="\n".join("    " + line for line in body.splitlines()))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_the_command_ends_without_tearing_its_interpreter_down():
    # `check` and grading one submission import torch in the command. Handlers registered while
    # the command runs (the sandbox's stop, temporary folders) still run, and what it printed to
    # a pipe (block-buffered) comes out.
    done = _command("atexit.register(print, 'exit handler ran')\nprint('checked')\nreturn 3")
    assert (done.returncode, done.stdout) == (3, "checked\nexit handler ran\n")
    plain = subprocess.run([sys.executable, "-c", _COMMAND.split("def main")[0]],
                           capture_output=True, text=True, timeout=120)
    assert plain.stdout == "torn down\n"  # the witness does speak at a normal teardown


def test_the_command_keeps_every_exit_status():
    failed = _command("raise KeyError('broken')")
    assert failed.returncode == 1 and "KeyError: 'broken'" in failed.stderr
    assert "torn down" not in failed.stdout
    assert _command("raise SystemExit('usage: ...')").returncode == 1
    assert _command("sys.exit(2)").returncode == 2
    assert _command("return 0").returncode == 0
    assert _command("raise KeyboardInterrupt").returncode == 130
    unknown = subprocess.run([sys.executable, "-m", "grader", "no-such-command"],
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr


def test_the_judges_fork_server_imports_pytorchs_compiler_only_where_declared():
    # The sandbox's server imports PyTorch's compiler (the meta device's first use: a second or
    # more); the judge's fork server only for an assignment whose tests need it (its profiler).
    from grader.course import REPO
    from grader.pipeline.pools import preload_for

    code = ("import json, sys\nfor name in {!r}:\n    __import__(name)\n"
            "print(json.dumps([m for m in ('torch._dynamo', 'sympy') if m in sys.modules]))")
    plain = preload_for(REPO / "assignments" / "self_attention")
    declared = preload_for(REPO / "assignments" / "efficient_attention")
    assert declared == [*plain[:-1], "torch._dynamo", plain[-1]]
    plain_loaded, declared_loaded = _fresh_all(code.format(plain), code.format(declared))
    assert json.loads(plain_loaded) == []
    assert json.loads(declared_loaded) == ["torch._dynamo", "sympy"]


def test_what_a_notebook_declares_for_the_judge_is_read_with_care(tmp_path):
    from grader.pipeline.pools import PRELOAD, preload_for

    def notebook(name, metadata):
        (tmp_path / f"{name}.ipynb").write_text(json.dumps({"metadata": metadata, "cells": []}))

    notebook("a", {"grader": {"judge_preload": ["sympy", "torch", 3]}})
    notebook("b", {"grader": {"judge_preload": "torch._dynamo"}})  # not a list: ignored
    notebook("c", {"grader": {"judge_preload": ["sympy", "numpy"]}})
    (tmp_path / "d.ipynb").write_text("{not json")
    # before the last, which ends the fork server's start-up (grader.startup.collector)
    assert preload_for(tmp_path) == [*PRELOAD[:-1], "sympy", "numpy", PRELOAD[-1]]
    assert preload_for(None) == PRELOAD == preload_for(tmp_path / "missing")


def test_what_a_notebook_declares_for_the_sandbox_is_read_with_care(tmp_path):
    from grader.pipeline.pools import sandbox_preload_for

    def notebook(name, metadata):
        (tmp_path / f"{name}.ipynb").write_text(json.dumps({"metadata": metadata, "cells": []}))

    notebook("a", {"grader": {"sandbox_preload": ["torch._dynamo", "os; import x", 3, ""]}})
    notebook("b", {"grader": {"sandbox_preload": "sympy"}})  # not a list: ignored
    notebook("c", {"grader": {"sandbox_preload": ["sympy", "torch._dynamo"]}})
    notebook("d", {"grader": ["not", "a", "dict"]})
    (tmp_path / "e.ipynb").write_text("{not json")
    assert sandbox_preload_for(tmp_path) == ["torch._dynamo", "sympy"]
    assert sandbox_preload_for(None) == [] == sandbox_preload_for(tmp_path / "missing")


_COMPILER = ("import sys\nprint(sorted(m for m in ('torch._dynamo', 'sympy') "
             "if m in sys.modules))")


_META_THEN_COMPILE = (
    "import sys, torch\n"
    "mask = torch.ones(4, 4, dtype=torch.bool, device='meta').tril()\n"
    "pe = torch.arange(6, device='meta')[:, None] * torch.ones(3, device='meta').exp()\n"
    "before = 'torch._dynamo' in sys.modules\n"
    "f = torch.compile(lambda x: torch.softmax(x, -1).tril(), backend='eager')\n"
    "x = torch.randn(3, 3, dtype=torch.float64)\n"
    "print(before, mask.shape, pe.shape, torch.equal(f(x), torch.softmax(x, -1).tril()))")


def test_a_sandbox_imports_pytorchs_compiler_for_students_only_where_declared(monkeypatch):
    # PyTorch's compiler (half a second, 150 MiB in every fork) is imported by the sandbox's
    # server where the assignment declares its students need it (they train: an optimizer's
    # step imports it), and nowhere else: the meta device's operations run without it
    # (grader/startup/compiler.py), and a student's torch.compile still imports and uses it.
    from concurrent.futures import ThreadPoolExecutor

    from grader.sandbox import launcher, session

    def case(preload):
        s = session.Session({}, session.Limits(cell_timeout=30, notebook_timeout=120),
                            preload=preload)
        s.start()
        try:
            return (s.request({"op": "run", "source": _COMPILER})["stdout"].strip(),
                    s.request({"op": "run", "source": _META_THEN_COMPILE}),
                    session.zygote(s.confined).start_parts)
        finally:
            s.close()
            session.zygote(s.confined).stop()

    # A server of its own for each case, both starting at once: a zygote is one per thread.
    monkeypatch.setattr(launcher, "_zygotes", {})
    cases = ((), ("torch._dynamo", "torch.fx.experimental.symbolic_shapes"))
    with ThreadPoolExecutor(len(cases)) as threads:
        answers = list(threads.map(case, cases))
    seen, ran = {}, {}
    for preload, (compiler, run, parts) in zip(cases, answers, strict=True):
        seen[preload], ran[preload] = compiler, run
        assert "meta device" in parts, parts
        assert ("compiler deferred" in parts) == (not preload), parts
    # symbolic shapes (sympy) always: every assignment's gradient tests need them (zygote.py)
    assert list(seen.values()) == ["['sympy']", "['sympy', 'torch._dynamo']"]
    assert [r["stdout"].strip() for r in ran.values()] == [
        "False torch.Size([4, 4]) torch.Size([6, 3]) True",
        "True torch.Size([4, 4]) torch.Size([6, 3]) True"], ran


_FULL_COLLECTION = ("import gc, resource\n"
                    "state = gc.isenabled(), gc.get_stats()[2]['collections']\n"
                    "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
                    "gc.collect()\n"
                    "print(*state, gc.get_freeze_count(), "
                    "resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)")


def test_a_sandbox_server_starts_without_the_collector_and_freezes_what_it_made():
    # The server imports with the garbage collector paused (five full collections during
    # torch's, its compiler's and IPython's imports: 0.3 s), then freezes what it made: a
    # student's gc.collect() would otherwise write to every object it shares with the server,
    # copying thousands of pages (0.16 s).
    from grader.sandbox import session

    s = session.Session({}, session.Limits(cell_timeout=30, notebook_timeout=120))
    s.start()
    try:
        enabled, full, frozen, faults = s.request(
            {"op": "run", "source": _FULL_COLLECTION})["stdout"].split()
    finally:
        s.close()
    assert enabled == "True" and full == "0"  # on for the student; none ran in the server
    assert int(frozen) > 100_000, frozen  # torch and IPython's objects
    assert int(faults) < 3000, faults  # about 13,600 pages copied without the freeze


def _collector(meeting):
    import gc

    _meet_the_other_pool_process(meeting)
    return gc.isenabled(), gc.get_freeze_count(), gc.get_stats()[2]["collections"]


def _validators(meeting):
    from nbformat import validator

    _meet_the_other_pool_process(meeting)
    return sorted(key[1:3] for key in validator.validators)


def _ask_each_pool_process(probe) -> list:
    """probe's answer from each of a fresh two-process pool."""
    from grader.pipeline.pools import LocalPool

    pool = LocalPool(2)
    try:
        return _one_call_each(pool, probe)
    finally:
        pool.close()


def _confinement_and_probes(meeting):
    from grader.sandbox import namespaces, session

    _meet_the_other_pool_process(meeting)
    found = session.confinement(False)  # what every notebook's judge asks
    return found, namespaces.probe.cache_info().misses


def test_pool_processes_take_the_commands_confinement_instead_of_probing_again():
    # Probing starts a sandboxed interpreter (about 40 ms of CPU); the command has just done
    # it on this machine, and hands its finding to each pool process.
    from grader.sandbox import session

    mine = session.confinement(False)
    seen = _ask_each_pool_process(_confinement_and_probes)
    assert seen == [(mine, 0), (mine, 0)], seen


def test_pool_processes_inherit_the_notebook_schemas_validator():
    # Each pool process reads the submissions' notebooks; the fork server compiled nbformat's
    # validator once (grader/startup/warmed.py), so none compiles its own on its first read.
    seen = _ask_each_pool_process(_validators)
    assert all((4, 5) in versions for versions in seen), seen


def test_the_fork_server_starts_without_the_collector_and_freezes_what_it_made():
    # Its imports (torch, the judge) ran three full collections with the collector on (0.25 s);
    # its pool processes inherit what it froze, which their own collections then skip.
    seen = _ask_each_pool_process(_collector)
    for enabled, frozen, full in seen:
        assert enabled and frozen > 100_000 and full == 0, seen


def _fork_servers_threads(meeting):
    import os

    _meet_the_other_pool_process(meeting)
    with open(f"/proc/{os.getppid()}/status") as f:  # the fork server, this process's parent
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return threads, os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no library starts a "
                    "second thread on it anyway")
def test_the_fork_server_keeps_to_one_thread():
    # numpy's OpenBLAS starts a thread per core as it loads, and PyTorch's OpenMP one per core
    # at the warm-up's first parallel operation; each spins for a while before it sleeps (0.1-
    # 0.2 s of the server's CPU a run). Its pool processes are each one judge on one core.
    seen = _ask_each_pool_process(_fork_servers_threads)
    assert seen == [(1, "1", "1")] * 2, seen


def _grade_then_list_gradebook_modules(meeting, task):
    import sys

    from grader.pipeline.pools import execute

    execute(task)
    _meet_the_other_pool_process(meeting)
    return sorted(m for m in sys.modules if m.partition(".")[0] in ("sqlalchemy", "alembic"))


def test_pool_processes_never_import_the_gradebooks_database_layer(tmp_path):
    # The command records the grades; a pool process that imported SQLAlchemy (for a warning
    # filter, as it did) paid 0.1 s of CPU for nothing, each.
    from grader.course import Course
    from grader.demo.sample_class import SAMPLE_CLASSES, make_submission
    from grader.nbgrader.release import release
    from grader.pipeline.autograde import prepare
    from grader.pipeline.pools import LocalPool

    course = Course(tmp_path / "course")
    released = release(course, "soft_select") / "soft_select.ipynb"
    folder = write_submission(tmp_path / "submissions", "s0", "soft_select", make_submission(
        course.source / "soft_select" / "soft_select.ipynb", released,
        SAMPLE_CLASSES["soft_select"][0]))
    task, _ = prepare(course, "soft_select", "s0", folder, None, False)
    pool = LocalPool(2)
    try:
        seen = _one_call_each(pool, _grade_then_list_gradebook_modules, task)
    finally:
        pool.close()
    assert seen == [[], []], seen


_MARK = "import sys\nsys.modules_at_start = set(sys.modules)"  # kept out of the notebook's names
_SINCE = "import json, sys\nprint(json.dumps(sorted(set(sys.modules) - sys.modules_at_start)))"
_COMPILER_PACKAGES = ("torch._dynamo", "torch._inductor", "sympy", "mpmath",
                      "torch.fx.experimental.symbolic_shapes")


@pytest.mark.slow
def test_assignments_that_do_not_declare_the_compiler_never_import_it(tmp_path, monkeypatch):
    # An assignment left without `sandbox_preload` must not need it: each story of its sample
    # class is graded as autograde grades it (grader.pipeline.pools.execute), and what each
    # student's
    # process imported between its first request and its last is looked at: none of PyTorch's
    # compiler, which would cost every student's process a second or more.
    from grader.course import REPO, Course
    from grader.demo.sample_class import SAMPLE_CLASSES, make_submission
    from grader.nbgrader.release import release
    from grader.pipeline.autograde import prepare
    from grader.pipeline.pools import execute, sandbox_preload_for
    from grader.sandbox import session

    imported = []
    start, close = session.Session.start, session.Session.close

    def starting(s):
        start(s)
        s.request({"op": "run", "source": _MARK})

    def closing(s):
        if s.alive:
            imported.append(json.loads(s.request({"op": "run", "source": _SINCE})["stdout"]))
        close(s)

    monkeypatch.setattr(session.Session, "start", starting)
    monkeypatch.setattr(session.Session, "close", closing)
    undeclared = [d.name for d in sorted((REPO / "assignments").iterdir())
                  if d.is_dir() and "torch._dynamo" not in sandbox_preload_for(d)]
    assert undeclared, "every assignment declares it: this test checks nothing"
    for name in undeclared:
        course = Course(tmp_path / name)
        released = release(course, name) / f"{name}.ipynb"
        for i, story in enumerate(SAMPLE_CLASSES[name]):
            folder = write_submission(tmp_path / "submissions", f"s{i}", name, make_submission(
                course.source / name / f"{name}.ipynb", released, story))
            task, _ = prepare(course, name, f"s{i}", folder, None, False)
            imported.clear()
            execute(task)
            assert imported, f"{name}, {story.story}: no student's process was looked at"
            heavy = sorted(m for found in imported for m in found
                           if m.startswith(_COMPILER_PACKAGES))
            assert not heavy, f"{name}, {story.story}: a student's process imported {heavy[:5]}"
