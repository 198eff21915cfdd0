"""Where the course lives on disk: its folders, its assignments and its notebooks.

The nbgrader course directory is generated under build/ (ignored by git). Its `source/` is a
link to the repository's `assignments/`, so the source notebooks stay where authors edit them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COURSE_ID = "attention-course"

# Per-cell time limit when autograding (seconds). Training cells in later assignments may need
# more; an assignment can override it in its own config (grader.nbgrader.config).
CELL_TIMEOUT = 120

# Arguments for every kernel we start: keep its start-up log out of the user's terminal.
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]


@dataclass(frozen=True)
class Course:
    """Paths of one nbgrader course directory (root) fed from a source directory."""

    root: Path
    source: Path = REPO / "assignments"
    db: str | None = None  # a database URL for the gradebook; default: SQLite in root
    # nbgrader's exchange, shared with the students (on a hub); default: one inside root
    shared_exchange: Path | None = None

    @property
    def release(self) -> Path:
        return self.root / "release"

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def exchange(self) -> Path:
        # Without a shared one, a writable exchange inside the course, so nbgrader never
        # reaches for /usr/local/share/nbgrader/exchange.
        return self.shared_exchange or self.root / "exchange"

    @property
    def has_gradebook(self) -> bool:
        return self.db is not None or (self.root / "gradebook.db").exists()

    @property
    def db_url(self) -> str:
        return self.db or f"sqlite:///{self.root / 'gradebook.db'}"

    def gradebook(self):
        """nbgrader's Gradebook of this course, to be used as a context manager (it commits,
        and closes its session, on leaving): `with course.gradebook() as gb: ...`. Opening one
        creates the database where there is none yet (`has_gradebook` says)."""
        from nbgrader.api import Gradebook  # (here: importing the course imports no nbgrader)

        return Gradebook(self.db_url, COURSE_ID)

    @classmethod
    def at(cls, root: Path) -> Course:
        """The course at `root`, its sources where its `source/` points (`prepare` made it)
        when it has one (a hub's course links its own copy), else the repository's."""
        source = root / "source"
        return cls(root, source=source.resolve()) if source.is_dir() else cls(root)

    def prepare(self) -> Course:
        """Create the directory skeleton and link `source` to the assignments."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.shared_exchange is None:
            self.exchange.mkdir(exist_ok=True)
        link = self.root / "source"
        if link.is_symlink() and link.resolve() != self.source.resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(self.source.resolve(), target_is_directory=True)
        return self

    def assignments(self) -> list[str]:
        return sorted(p.parent.name for p in self.source.glob("*/*.ipynb")
                      if ".ipynb_checkpoints" not in p.parts)

    def notebooks(self, assignment: str) -> list[str]:
        return sorted(p.stem for p in (self.source / assignment).glob("*.ipynb"))


DEFAULT_COURSE = Course(REPO / "build" / "course")
