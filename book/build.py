"""`make site`: the self-study site, executed lectures and worked solutions, in build/site/.

1. Every lecture is executed headless with the lecture checks (`lectures.toolkit.execute`: each
   figure has a title and labelled axes), one per core at a time. An executed copy in
   build/lectures/ (what `make lectures` writes, and the test suite once per run) is reused
   while it is newer than the notebook and the code it runs.
2. Every source assignment (solutions, model answers, visible and hidden tests) is executed in
   its own folder; copies are kept in build/site-cache/ on the same terms.
3. book/ (the Jupyter Book configuration and the contents page) and those notebooks are staged
   in build/site-src/ and built by Jupyter Book 1.x (Sphinx) into build/site/, with Sphinx
   warnings treated as errors. MathJax is copied into the site (book/_config.yml), so the
   pages need no network: build/site/ can be opened from disk or served as it is.

Run from the repository root: `python book/build.py` (`--no-execute` builds from whatever
executed copies exist, for quick work on the layout; `--without-solutions` leaves the worked
solutions out, for instructors who publish the site while students work on the assignments).

On the worked-solution pages every answer starts behind a closed toggle labelled as a worked
answer (code answers) or a model answer (written ones), so a reader who opens an assignment's
page sees the questions first and chooses when to look.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "book"
BUILD = REPO / "build"
LECTURES = REPO / "lectures"
ASSIGNMENTS = REPO / "assignments"
EXECUTED_LECTURES = BUILD / "lectures"  # shared with `make lectures`
EXECUTED_SOLUTIONS = BUILD / "site-cache" / "solutions"
STAGE = BUILD / "site-src"
SITE = BUILD / "site"
CELL_TIMEOUT = 180

# Code that the notebooks' outputs depend on: a change to any of it re-executes them.
LECTURE_CODE = [LECTURES / "toolkit", REPO / "solutions"]
SOLUTION_CODE = [REPO / "solutions", REPO / "grader"]


def lectures() -> list[Path]:
    return sorted(LECTURES.glob("*.ipynb"))


def assignments() -> list[Path]:
    return sorted(p for p in ASSIGNMENTS.glob("*/*.ipynb") if p.stem == p.parent.name)


def _fresh(executed: Path, source: Path, code: list[Path]) -> bool:
    """Whether `executed` is newer than its source notebook and every .py file (and template,
    .j2: the attention explorer's) in `code`."""
    if not executed.exists():
        return False
    newest = max(p.stat().st_mtime for folder in code for pattern in ("*.py", "*.j2")
                 for p in folder.rglob(pattern))
    return executed.stat().st_mtime > max(source.stat().st_mtime, newest)


def execute_stale(paths: list[Path], out: Path, code: list[Path], work) -> list[Path]:
    """The executed copy in `out` of each notebook: reused while up to date, made by
    `work(path)` (which returns its seconds) otherwise, several at once (`in_lanes`). The first
    notebook that fails stops the build."""
    from lectures.toolkit.execute import in_lanes

    stale = [p for p in paths if not _up_to_date(out / p.name, p, code)]
    for _, error in in_lanes(work, stale, done=_say_done).values():
        if error is not None:
            raise error
    return [out / p.name for p in paths]


def _up_to_date(out: Path, source: Path, code: list[Path]) -> bool:
    if _fresh(out, source, code):
        print(f"  {source.name}: up to date in {out.parent.relative_to(REPO)}/")
        return True
    return False


def _say_done(path: Path, seconds: float | None, error: BaseException | None) -> None:
    # the site tests read these lines to count what the build executed again
    if error is None:
        print(f"  {path.name}: executed in {seconds:.0f} s", flush=True)
    else:
        print(f"  {path.name}: failed", flush=True)


def execute_lecture(path: Path) -> float:
    """Execute a lecture with the figure checks into build/lectures/, as `make lectures`
    writes it; the seconds."""
    from lectures.toolkit.execute import execute_to

    return execute_to(path, EXECUTED_LECTURES)[1]


def execute_solution(path: Path) -> float:
    """Execute a source assignment in its own folder into build/site-cache/; the seconds."""
    from nbclient import NotebookClient

    out = EXECUTED_SOLUTIONS / path.name
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   extra_arguments=["--IPKernelApp.log_level=ERROR"],
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return time.perf_counter() - start


SHOW_CODE = "Show the worked answer"
HIDE_CODE = "Hide the worked answer"
MODEL_ANSWER = "Model answer (open when you have written yours)"
SOLUTIONS_PART = "Worked solutions"


def stage(lecture_files: list[Path], solution_files: list[Path], to: Path = STAGE) -> Path:
    """book/ and the executed notebooks in `to`; with no `solution_files`, a book without the
    worked solutions (their part of the contents and their links on the contents page left
    out)."""
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(BOOK, to, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (to / "lectures").mkdir()
    for f in lecture_files:
        nb = nbformat.read(f, as_version=4)
        label_worked_answers(nb)
        nbformat.write(nb, to / "lectures" / f.name)
    if solution_files:
        (to / "solutions").mkdir()
        for f in solution_files:
            nb = nbformat.read(f, as_version=4)
            hide_answers(nb)
            nbformat.write(nb, to / "solutions" / f.name)
    else:
        _leave_out_solutions(to)
    return to


def label_worked_answers(nb) -> None:
    """A lecture's worked answers (cells tagged `worked-answer`, hidden by `hide-cell`) get a
    toggle that says what it hides."""
    for cell in nb.cells:
        if "worked-answer" in cell.metadata.get("tags", []):
            _label_toggle(cell)


def hide_answers(nb) -> int:
    """Put every answer cell of a worked solution (nbgrader's solution cells) behind a closed,
    labelled toggle: code through myst-nb's `hide-cell` tag with its own prompt, a written
    answer inside a collapsed admonition. The number of answers hidden."""
    hidden = 0
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        hidden += 1
        if cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            tags += [t for t in ("worked-answer", "hide-cell") if t not in tags]
            _label_toggle(cell)
        else:
            fence = ":" * max(4, 1 + max((len(run) for run in _colon_runs(cell.source)),
                                         default=0))
            cell.source = (f"{fence}{{admonition}} {MODEL_ANSWER}\n:class: dropdown worked-answer"
                           f"\n\n{cell.source}\n{fence}")
    return hidden


def _label_toggle(cell) -> None:
    """myst-nb's toggle of a hidden code cell says "Show the worked answer", not "Show code
    cell source"."""
    cell.metadata["mystnb"] = {**cell.metadata.get("mystnb", {}),
                               "code_prompt_show": SHOW_CODE, "code_prompt_hide": HIDE_CODE}


def _colon_runs(text: str) -> list[str]:
    return re.findall(r"^(:{3,})", text, flags=re.M)


def _leave_out_solutions(to: Path) -> None:
    """The contents without the worked solutions' part, and the contents page's table without
    its links to them (the assignment's name stays, as plain text)."""
    toc = (to / "_toc.yml").read_text()
    part = toc.index(f"  - caption: {SOLUTIONS_PART}")
    (to / "_toc.yml").write_text(toc[:part].rstrip() + "\n")
    index = (to / "index.md").read_text()
    index = re.sub(r"\{doc\}`([^<`]+?) <solutions/[^>]+>`", r"`\1`", index)
    index = index.replace("assignment (worked solution)", "assignment")
    start = index.find("## About the worked solutions")
    if start != -1:
        index = index[:start].rstrip() + "\n"
    (to / "index.md").write_text(index)


def sphinx(source: Path, out: Path = SITE, work: Path = BUILD / "site-build") -> Path:
    """Build the staged book into `out`; Sphinx warnings fail the build (all are reported)."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(jupyter_book), "build", str(source), "--path-output", str(work), "--all",
           "--warningiserror", "--keep-going", "--quiet"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-5000:])
        sys.stderr.write(done.stderr[-5000:])
        raise SystemExit(f"jupyter-book build failed (exit {done.returncode})")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(work / "_build" / "html", out)
    return out


def build(execute: bool = True, with_solutions: bool = True) -> Path:
    start = time.perf_counter()
    if execute:
        print("Executing the lectures (with the figure checks):", flush=True)
        lecture_files = execute_stale(lectures(), EXECUTED_LECTURES, LECTURE_CODE,
                                      execute_lecture)
        solution_files = []
        if with_solutions:
            print("Executing the worked solutions:", flush=True)
            solution_files = execute_stale(assignments(), EXECUTED_SOLUTIONS, SOLUTION_CODE,
                                           execute_solution)
    else:
        lecture_files = [EXECUTED_LECTURES / p.name for p in lectures()]
        solution_files = [EXECUTED_SOLUTIONS / p.name for p in assignments()] \
            if with_solutions else []
        missing = [p for p in lecture_files + solution_files if not p.exists()]
        if missing:
            raise SystemExit(f"not executed yet: {', '.join(p.name for p in missing)}")
    site = sphinx(stage(lecture_files, solution_files))
    print(f"Site built in {time.perf_counter() - start:.0f} s: {site.relative_to(REPO)}/index.html")
    return site


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-execute", action="store_true",
                   help="use the executed copies as they are (fails if one is missing)")
    p.add_argument("--without-solutions", action="store_true",
                   help="leave the worked solutions out (a site to publish during a term)")
    args = p.parse_args(argv)
    build(execute=not args.no_execute, with_solutions=not args.without_solutions)
    return 0


if __name__ == "__main__":
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    sys.exit(main())
