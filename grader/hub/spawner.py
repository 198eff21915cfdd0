"""Each student's server confined: its own control group and its own /tmp and /dev/shm.

JupyterHub's LocalProcessSpawner starts a server as its user and nothing more: one student's
fork bomb, memory hog or full /tmp is every student's problem. `ConfinedSpawner` starts it the
way The Littlest JupyterHub's SystemdSpawner does with a unit, without systemd:
  - a control group per user (grader.sandbox.cgroup.NamedCgroup, the grader's own cgroup code):
    memory (what the server's processes allocate and write to tmpfs), tasks (processes and
    threads) and a CPU quota. The server's first process joins it before it runs anything of
    the student's, so every kernel, terminal and fork is born into it and cannot leave (moving
    needs write access to root's cgroup files);
  - a mount namespace of its own (util-linux `unshare`) with fresh tmpfs mounts on /tmp and
    /dev/shm, sized (`mount`), before dropping to the user (`setpriv`, which also drops every
    capability). Another student's files there are out of sight; the pages count against the
    writer's memory.
When the server stops, whatever is left in its group (a background process, an orphaned
kernel) is killed; the same happens before a server starts again.

Every server, confined or not, runs under Debian's `tini -s`, Docker's `--init`: a child
subreaper that forwards signals to the server and reaps every orphan below it. Without it an
orphan (a fork bomb's children once their parent exits, a kernel's stray process) is handed to
the machine's first process, and in a container that process often reaps nothing: the zombies
keep counting against the student's task limit until the server can start no thread at all.

Users in `unconfined_users` (the instructor, who grades the class on their server) are started
as LocalProcessSpawner does.
"""

from __future__ import annotations

import os
import pwd
import shutil

from jupyterhub.spawner import LocalProcessSpawner
from jupyterhub.traitlets import ByteSpecification
from traitlets import Integer, Set, Unicode

from grader.sandbox import cgroup

# Run as root in the new mount namespace: $1 and $2 are the sizes of /tmp and /dev/shm, the
# rest is setpriv's command line (the server's command last). No value is ever part of the
# script itself.
MOUNT_AND_DROP = ('mount -t tmpfs -o "size=$1,mode=1777,nosuid,nodev" tmpfs /tmp && '
                  'mount -t tmpfs -o "size=$2,mode=1777,nosuid,nodev" tmpfs /dev/shm && '
                  'shift 2 && exec "$@"')


class ConfinedSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with per-user limits (mem_limit, cpu_limit, tasks_limit) and a
    private /tmp and /dev/shm (tmp_size, shm_size)."""

    tasks_limit = Integer(512, help="Processes and threads a server may have at once.",
                          config=True)
    tmp_size = ByteSpecification("1G", help="Size of each server's private /tmp.",
                                 config=True)
    shm_size = ByteSpecification("256M", help="Size of each server's private /dev/shm.",
                                 config=True)
    cgroup_prefix = Unicode("jupyterhub", help="The folder of the users' control groups in "
                            "each cgroup hierarchy (one per hub on a machine).", config=True)
    unconfined_users = Set(help="Users whose servers start without limits.", config=True)

    def _confined(self) -> bool:
        return self.user.name not in self.unconfined_users

    def _group(self) -> cgroup.NamedCgroup:
        if not self.mem_limit:
            raise RuntimeError("ConfinedSpawner needs a mem_limit")
        return cgroup.NamedCgroup(f"{self.cgroup_prefix}/{self.user.name}", self.mem_limit,
                                  self.tasks_limit, self.cpu_limit)

    def _wrapper(self) -> list[str]:
        """unshare ... sh -c MOUNT_AND_DROP ... tini -s --, up to the server's command."""
        tools = _tools("unshare", "setpriv", "sh", "tini")
        user = pwd.getpwnam(self.user.name)
        return [tools["unshare"], "--mount", "--propagation", "private", "--",
                tools["sh"], "-c", MOUNT_AND_DROP, "confine", str(self.tmp_size),
                str(self.shm_size), tools["setpriv"], f"--reuid={user.pw_uid}",
                f"--regid={user.pw_gid}", "--init-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--", tools["tini"], "-s", "--"]

    async def start(self):
        if not self._confined():
            cmd = self.cmd
            self.cmd = [_tools("tini")["tini"], "-s", "--", *cmd]
            try:
                return await super().start()
            finally:
                self.cmd = cmd
        try:
            self._cgroup = self._group()
        except OSError as e:  # no cgroup hierarchy this process may write to
            raise RuntimeError(f"{self.user.name}'s server cannot be confined: {e} (the hub "
                               "needs root and the memory, pids, cpu and freezer cgroups)") from e
        self._cgroup.end()  # what an earlier server left running
        cmd = self.cmd
        self.cmd = [*self._wrapper(), *cmd]
        try:
            return await super().start()  # Popen, with the preexec below
        finally:
            self.cmd = cmd

    def _root_dir(self, home: str) -> str:
        """The server's notebook_dir as a path: the folder its file browser shows."""
        root = self.format_string(self.notebook_dir) if self.notebook_dir else "~"
        return os.path.join(home, root[2:]) if root == "~" or root.startswith("~/") else root

    def make_preexec_fn(self, name):
        """The server's process starts in its notebook_dir, not in the home as Jupyter's own
        spawner leaves it: a terminal JupyterLab opens at the file browser's top folder asks
        for "" and gets the server's working folder."""
        home = pwd.getpwnam(name).pw_dir
        root = os.path.normpath(self._root_dir(home))
        if not self._confined():
            become_user = super().make_preexec_fn(name)

            def become_user_in_root():
                become_user()
                os.chdir(root)

            return become_user_in_root
        procs = [str(path / "cgroup.procs") for path in self._cgroup.dirs.values()]

        def join_group():
            """In the server's first process, still root, before anything else runs: system
            calls only (after a fork in the threaded hub, a lock another thread held, such as
            the import lock, is never released)."""
            pid = b"%d" % os.getpid()
            for path in procs:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            os.chdir(root)

        return join_group

    async def stop(self, now=False):
        await super().stop(now=now)
        if self._confined():
            self._group().end()  # kernels, terminals, background processes: all of them


def _tools(*names: str) -> dict[str, str]:
    """The full paths of the programs a server is started through, or a clear error."""
    tools = {name: shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin") for name in names}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} missing (apt-get install util-linux tini): "
                           "the servers are started through them")
    return tools
