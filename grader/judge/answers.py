"""Which names a test may take from the student's process, and which are the grader's own.

A test trusts only what the instructor wrote. The student's answers are the names their solution
cells define in the instructor's source notebook (functions, classes, values such as the by-hand
matrices): those come from the student's process. The instructor's other code cells (imports,
data generators, constants, given classes) run on the grader's side too, so a test uses the
grader's copy of them, whatever the student redefined. Statements of an instructor cell that use
an answer (training the student's model, say) can only run where the answer lives: they run in
the student's process alone, and the names they bind (`model`) are taken from there.
"""

from __future__ import annotations

import ast
import functools

from IPython.core.inputtransformer2 import TransformerManager

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


@functools.lru_cache(maxsize=1024)  # a class's notebooks share their instructor cells
def python(source: str) -> str:
    """A cell's source as plain Python (IPython magics become get_ipython() calls). IPython's
    rules depend on the text alone; tokenizing it costs about half a millisecond a cell."""
    return TransformerManager().transform_cell(source)


def bound_names(node: ast.AST) -> set[str]:
    """Names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del))}


def used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def declared(solution_sources: list[str]) -> frozenset[str]:
    """The student's answers: every top-level name the instructor's solution cells bind."""
    names: set[str] = set()
    for source in solution_sources:
        try:
            tree = ast.parse(python(source))
        except SyntaxError:
            continue
        for node in tree.body:
            names |= bound_names(node)
    return frozenset(n for n in names if not n.startswith("_"))


def split(source: str, tainted: set[str]) -> tuple[str | None, set[str]]:
    """An instructor cell, split: (the code the grader runs on its side, the names it leaves to
    the student's process). `tainted` (answers, and what depends on them) grows in place."""
    try:
        tree = ast.parse(python(source))
    except SyntaxError:
        return None, set()
    ours, theirs = [], set()
    for node in tree.body:
        names = bound_names(node)
        if isinstance(node, DEFINITIONS):
            ours.append(node)  # defining is harmless; calling it may reach the student's code
            if used_names(node) & tainted:
                tainted |= names
        elif used_names(node) & (tainted | {"get_ipython"}):
            theirs |= names
            tainted |= names
        else:
            ours.append(node)
    module = ast.Module(body=ours, type_ignores=[])
    return (ast.unparse(module) if ours else None), theirs
