"""Where a one-machine course hub keeps everything, and who its people are.

    ROOT/                      root        0755
      state/                   root        0700  JupyterHub's database, cookie secret, accounts
      proxy/                   root        0755  configurable-http-proxy (npm ci)
      env/                     root        0755  the servers' Python: the student edition
      wheel/                   root        0755  the student edition's wheel it was built from
      config/student/          root        0755  Jupyter + nbgrader config of student servers
      config/instructor/       root        0755  ... of the instructor's server (formgrader)
      exchange.img             root        0600  the exchange's own file system (ext4)
      exchange/                root        1777  nbgrader's exchange (as /tmp: sticky), that
                                                 file system loop-mounted: bounded in size;
                                                 a default ACL keeps what students create
                                                 there to its creator
        attention-course/      instructor  0755
          outbound/            instructor  0755  released assignments, readable by all
          inbound/             instructor  1733  submissions: writable, never listable;
                                                 a default ACL lets the instructor read them
                                                 and denies every other student
          feedback/            instructor  0711  pages named by a hash only their student knows
      instructor/              instructor  0700  the instructor's server root
        lib/                               grader + solutions + source notebooks
        course/                            nbgrader course folder, gradebook.db
    /home/STUDENT              STUDENT     0700  each student's server root

Every student belongs to the group `GROUP_STUDENTS`, which is denied the repository itself by
an ACL (the checkout holds solutions/ and assignments/).

Each student's server runs in a control group of its own, with a private /tmp and /dev/shm
(grader.hub.spawner), bounded by `ServerLimits`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.course import COURSE_ID

DEFAULT_ROOT = Path("/srv/attention-course")
GROUP_STUDENTS = "course-students"
GROUP_INSTRUCTORS = "course-instructors"
# The GECOS field of every account `make hub` creates: an existing account without it is
# someone's real account, never touched.
MARKER = "attention-course demo account (make hub)"


@dataclass(frozen=True)
class ServerLimits:
    """What one student's server, with everything it starts (kernels, terminals, what those
    fork), may use. Sizes as JupyterHub writes them: bytes, or a number with K, M, G or T
    (powers of 1024)."""

    memory: str = "2G"  # RAM, what it writes to its /tmp and /dev/shm included (tmpfs pages)
    cpus: float = 1.0  # at most this many CPUs' worth of time
    tasks: int = 512  # processes and threads at once
    tmp: str = "1G"  # its private /tmp (within `memory`)
    shm: str = "256M"  # its private /dev/shm (within `memory`)


@dataclass(frozen=True)
class Hub:
    root: Path = DEFAULT_ROOT
    instructor: str = "instructor"
    students: tuple[str, ...] = ("alice", "bob", "carol")
    ip: str = "127.0.0.1"
    port: int = 8000  # where users connect (the proxy)
    hub_port: int = 8081  # JupyterHub itself, behind the proxy (loopback)
    api_port: int = 8001  # the proxy's REST API, which only the hub uses (loopback)
    limits: ServerLimits = ServerLimits()  # each student's server
    # The exchange's own file system (all students' submissions, releases and feedback);
    # "0": a plain folder on the root file system, unbounded.
    exchange_size: str = "2G"

    @property
    def users(self) -> tuple[str, ...]:
        return (self.instructor, *self.students)

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def proxy(self) -> Path:
        return self.root / "proxy"

    @property
    def proxy_command(self) -> Path:
        return self.proxy / "node_modules" / ".bin" / "configurable-http-proxy"

    @property
    def env(self) -> Path:
        return self.root / "env"

    @property
    def python(self) -> Path:
        return self.env / "bin" / "python"

    def config(self, role: str) -> Path:
        return self.root / "config" / role

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def course_exchange(self) -> Path:
        return self.exchange / COURSE_ID

    @property
    def instructor_root(self) -> Path:
        return self.root / "instructor"

    @property
    def lib(self) -> Path:
        return self.instructor_root / "lib"

    @property
    def course(self) -> Path:
        return self.instructor_root / "course"

    @property
    def exchange_image(self) -> Path:
        return self.root / "exchange.img"

    @property
    def accounts_file(self) -> Path:
        return self.state / "accounts.json"

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{self.port}"

    def save(self) -> Path:
        path = self.state / "hub.json"
        data = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        path.write_text(json.dumps(data, indent=1))
        return path

    @classmethod
    def load(cls, root: Path) -> Hub:
        data = json.loads((Path(root) / "state" / "hub.json").read_text())
        return cls(root=Path(data["root"]), instructor=data["instructor"],
                   students=tuple(data["students"]), ip=data["ip"], port=data["port"],
                   hub_port=data["hub_port"], api_port=data["api_port"],
                   limits=ServerLimits(**data.get("limits", {})),
                   exchange_size=data.get("exchange_size", cls.exchange_size))
