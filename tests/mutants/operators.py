"""Mutants of the solution regions, made by machine: each one small slip a student could make.

A solution region is the code between `### BEGIN SOLUTION` and `### END SOLUTION` of a solution
cell: exactly what a student writes. Each operator below models a kind of real slip (a constant
off by one, an axis swapped, a call dropped, two twin modules swapped, an operation moved past
another, a cached entry kept in the other order, training and evaluation swapped, ...), not just
any change of syntax. A mutant is the region parsed, changed at one node, and printed again with
ast.unparse, as an Edit of the cell (grader/demo/sample_class.py), so that it is graded exactly
the way the catalogue's hand-written mistakes are.

Why ast.unparse and not text surgery: an operator then names what it changed (a node), never
lands inside a comment or a string, and two operators that produce the same program are seen to
be one mutant. Comments are lost in the printed region; that is harmless (the unmutated region
printed the same way is kept as the `identity` control, which must earn full marks).
"""

from __future__ import annotations

import ast
import copy
import difflib
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.demo.sample_class import Edit, _solution_text

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"

# Method calls whose integer arguments are axes: an axis slip, not a constant off by one.
AXIS_METHODS = {"transpose", "unsqueeze", "squeeze", "flatten", "softmax", "amax", "amin", "sum",
                "mean", "var", "std", "max", "min", "cat", "stack", "argmax", "size",
                "log_softmax", "movedim", "swapaxes", "cumsum"}
AXIS_KEYWORDS = {"dim", "axis", "dims", "start_dim", "end_dim"}
# Calls that are not an operation on a tensor: dropping them is not a slip anyone makes.
KEEP_CALLS = {"range", "len", "min", "max", "zip", "enumerate", "float", "int", "super",
              "isinstance", "list", "tuple", "print", "getattr"}
# Tensor methods whose call a student may leave out (the result is then the tensor itself).
DROPPABLE_METHODS = {"transpose", "unsqueeze", "squeeze", "tril", "triu", "contiguous", "to",
                     "float", "double", "flatten", "exp", "clone", "t", "masked_fill", "all",
                     "round", "floor", "sqrt", "abs"}
NEVER_DROPPED_KEYWORDS = {"device"}  # device slips need a device to see: grader/checks/devices.py


@dataclass(frozen=True)
class Region:
    """One solution region of one cell, as make_submission writes it (markers removed)."""

    assignment: str
    cell: str  # grade_id
    text: str  # the region's lines, exactly as they stand in the submitted cell
    indent: str
    cell_text: str  # the whole cell as a student hands it in unchanged

    def tree(self) -> ast.Module:
        return ast.parse(textwrap.dedent(self.text))

    def printed(self, tree: ast.AST) -> str:
        return textwrap.indent(ast.unparse(tree), self.indent)


@dataclass(frozen=True)
class Mutant:
    id: str  # ASSIGNMENT.CELL.OPERATOR.N: also the student id it is graded under
    assignment: str
    cell: str
    operator: str
    what: str  # the change in one line, e.g. "dim=-1 -> dim=-2"
    edit: Edit
    diff: str = ""  # the changed lines, against the region printed the same way
    cause: str | None = None  # the cause id its messages should name (expected.py)

    @property
    def student(self) -> str:
        return self.id.replace(".", "-")


def regions(source_nb: Path, assignment: str) -> list[Region]:
    """Every code solution region of the notebook, in order."""
    out = []
    for cell in nbformat.read(source_nb, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("solution"):
            continue
        lines = cell.source.splitlines()
        cell_text = _solution_text(cell)
        starts = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
        for start in starts:
            end = next(i for i in range(start, len(lines)) if lines[i].strip() == END)
            body = lines[start + 1:end]
            indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
            out.append(Region(assignment, meta["grade_id"], "\n".join(body), indent, cell_text))
    return out


# --- the operators: each yields (what, replacement) for one node ----------------------------


def _int_value(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int):
        return -node.operand.value
    return None


def _number(value) -> ast.expr:
    return (ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0
            else ast.Constant(value))


def _axis_nodes(tree) -> set[int]:
    """ids of the nodes that are axes: dim= keywords, integer arguments of axis methods."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in AXIS_KEYWORDS:
            out.add(id(node.value))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in AXIS_METHODS):
            out.update(id(a) for a in node.args if _int_value(a) is not None)
    return out


def axis(node, ctx):
    """A statistic or an operation over another axis: dim=-1 -> dim=-2, transpose(1, 2) ->
    transpose(0, 2), unsqueeze(1) -> unsqueeze(0)."""
    if id(node) not in ctx.axes:
        return
    value = _int_value(node)
    if value is None:
        return
    for other in ([-2] if value == -1 else [-1] if value == -2 else
                  [v for v in (value - 1, value + 1) if v >= 0]):
        yield f"axis {value} -> {other}", _number(other)


def constant(node, ctx):
    """A constant off by one (an int, or a float that is not an axis)."""
    if id(node) in ctx.axes or id(getattr(node, "operand", None)) in ctx.axes:
        return
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        if ctx.parent_is_usub(node):
            return  # the whole -n is one constant: handled at the UnaryOp
        for other in (node.value + 1, node.value - 1):
            yield f"{node.value!r} -> {other!r}", _number(other)
    value = _int_value(node)
    if isinstance(node, ast.UnaryOp) and value is not None:
        for other in (value + 1, value - 1):
            yield f"{value} -> {other}", _number(other)


SWAPPED_BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                  ast.MatMult: ast.Mult, ast.Pow: ast.Mult, ast.FloorDiv: ast.Div}
SWAPPED_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                   ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def operator(node, ctx):
    """A swapped operator: / for *, + for -, @ for *, < for <=, == for != ..."""
    if isinstance(node, ast.BinOp) and type(node.op) in SWAPPED_BINOPS:
        new = copy.copy(node)
        new.op = SWAPPED_BINOPS[type(node.op)]()
        yield f"{type(node.op).__name__} -> {type(new.op).__name__}", new
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in \
            SWAPPED_COMPARE:
        new = copy.copy(node)
        new.ops = [SWAPPED_COMPARE[type(node.ops[0])]()]
        yield f"{type(node.ops[0]).__name__} -> {type(new.ops[0]).__name__}", new


def sign(node, ctx):
    """A dropped minus, ~ or not: the kernel's minus sign, an inverted mask."""
    if isinstance(node, ast.UnaryOp) and _int_value(node) is None:
        yield f"{type(node.op).__name__} dropped", node.operand


def condition(node, ctx):
    """A branch taken the other way (pre-norm for post-norm), a flag flipped (keepdim)."""
    if isinstance(node, ast.If):
        new = copy.copy(node)
        new.test = ast.UnaryOp(ast.Not(), node.test)
        yield "if-condition negated", new
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        yield f"{node.value} -> {not node.value}", ast.Constant(not node.value)


def _call_name(node) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _is_module_function(node) -> bool:
    """torch.exp(x), F.gelu(x), math.sqrt(d): a function of a module, not a tensor method."""
    return (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id in {"torch", "F", "math", "nn"})


def dropped_call(node, ctx):
    """A call left out: the transpose, the tanh, the output projection, the dropout, the mask."""
    if not isinstance(node, ast.Call) or _call_name(node) in KEEP_CALLS:
        return
    func = node.func
    if (isinstance(func, ast.Attribute) and func.attr in DROPPABLE_METHODS
            and not _is_module_function(node)
            and not (isinstance(func.value, ast.Name) and func.value.id == "self")):
        yield f".{func.attr}(...) dropped", func.value  # x.transpose(-2, -1) -> x
    elif len(node.args) == 1 and not isinstance(node.args[0], ast.Starred):
        yield f"{ast.unparse(func)}(...) dropped", node.args[0]  # torch.tanh(h) -> h


def swapped_arguments(node, ctx):
    """Two arguments in the wrong order: (q, k, v) as (k, q, v); cat([past, new]) as
    cat([new, past]), a cache kept in the other order."""
    if isinstance(node, ast.Call):
        args = node.args
        for i in range(len(args) - 1):
            if ast.dump(args[i]) != ast.dump(args[i + 1]) and not any(
                    isinstance(a, ast.Starred) for a in args[i:i + 2]):
                new = copy.copy(node)
                new.args = [*args[:i], args[i + 1], args[i], *args[i + 2:]]
                yield f"arguments {i + 1} and {i + 2} swapped", new
    if isinstance(node, ast.List | ast.Tuple) and len(node.elts) == 2 and ctx.is_argument(node):
        new = copy.copy(node)
        new.elts = node.elts[::-1]
        yield "the two entries in the other order", new


def finite_inf(node, ctx):
    """-inf replaced by a finite number (the fill value that a large score can beat)."""
    if (isinstance(node, ast.Call) and _call_name(node) == "float" and node.args
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "-inf"):
        yield "-inf -> -1e9", ast.UnaryOp(ast.USub(), ast.Constant(1e9))


def slice_bound(node, ctx):
    """A slice bound moved by one: x[..., i0:i1 + 1], idx[:, -max_len + 1:]."""
    if isinstance(node, ast.Slice):
        for side in ("lower", "upper"):
            bound = getattr(node, side)
            if bound is None:
                continue
            for op, sign_ in ((ast.Add(), "+"), (ast.Sub(), "-")):
                new = copy.copy(node)
                setattr(new, side, ast.BinOp(bound, op, ast.Constant(1)))
                yield f"slice {side} bound {sign_} 1", new


def loop_bound(node, ctx):
    """An off-by-one at a tile or cache boundary: range(a, b + 1), min(S, i1 - 1)."""
    if isinstance(node, ast.Call) and _call_name(node) in {"range", "min", "max"}:
        for i, arg in enumerate(node.args):
            if _int_value(arg) is not None:
                continue  # constants: the constant operator
            for op, sign_ in ((ast.Add(), "+"), (ast.Sub(), "-")):
                new = copy.copy(node)
                new.args = [*node.args]
                new.args[i] = ast.BinOp(arg, op, ast.Constant(1))
                yield f"{_call_name(node)} argument {i + 1} {sign_} 1", new


def twin(node, ctx):
    """Twin modules or parameters swapped: norm1 for norm2, k_proj for v_proj, W_q for W_k."""
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self"):
        for other in sorted(ctx.twins.get(node.attr, ())):
            new = copy.copy(node)
            new.attr = other
            yield f"self.{node.attr} -> self.{other}", new


def layout(node, ctx):
    """A layout assumption: .view where the input may not be contiguous."""
    if isinstance(node, ast.Call) and _call_name(node) == "reshape" and isinstance(
            node.func, ast.Attribute):
        new = copy.copy(node)
        new.func = ast.Attribute(node.func.value, "view", ast.Load())
        yield ".reshape -> .view", new


def _single_call(node) -> bool:
    return (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and _call_name(node) not in KEEP_CALLS)


def reordered(node, ctx):
    """An operation moved before or after another: f(g(x)) -> g(f(x)) (dropout and activation,
    norm and residual)."""
    if _single_call(node) and _single_call(node.args[0]):
        inner = node.args[0]
        outer = copy.copy(node)
        outer.args = [inner.args[0]]
        new = copy.copy(inner)
        new.args = [outer]
        yield f"{ast.unparse(node.func)} and {ast.unparse(inner.func)} in the other order", new


def train_eval(node, ctx):
    """Training and evaluation behaviour swapped: dropout applied whatever the mode, or the
    mode flag read the other way."""
    if (_single_call(node) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "dropout" and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"):
        yield "dropout kept on in evaluation", ast.parse(
            f"F.dropout({ast.unparse(node.args[0])}, p=self.dropout.p, training=True)",
            mode="eval").body
    if isinstance(node, ast.Attribute) and node.attr == "training":
        yield "self.training read the other way", ast.UnaryOp(ast.Not(), node)


def dropped_keyword(node, ctx):
    """A keyword argument left out: keepdim=True, dtype=..., dim=... (the default then)."""
    if isinstance(node, ast.Call):
        for i, kw in enumerate(node.keywords):
            if kw.arg and kw.arg not in NEVER_DROPPED_KEYWORDS:
                new = copy.copy(node)
                new.keywords = node.keywords[:i] + node.keywords[i + 1:]
                yield f"{kw.arg}= dropped", new


NODE_OPERATORS: dict[str, Callable] = {
    "axis": axis, "constant": constant, "operator": operator, "sign": sign,
    "condition": condition, "dropped_call": dropped_call, "swapped_arguments": swapped_arguments,
    "finite_inf": finite_inf, "slice_bound": slice_bound, "loop_bound": loop_bound,
    "twin": twin, "layout": layout, "reordered": reordered, "train_eval": train_eval,
    "dropped_keyword": dropped_keyword,
}


def moved_statements(tree) -> Iterator[tuple[str, ast.Module]]:
    """Two neighbouring statements in the other order (mask before or after the softmax, the
    cache updated before or after it is read)."""
    simple = (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.AnnAssign)
    for n, block in enumerate(_blocks(tree)):
        for i in range(len(block) - 1):
            if isinstance(block[i], simple) and isinstance(block[i + 1], simple):
                new = copy.deepcopy(tree)
                body = list(_blocks(new))[n]
                body[i], body[i + 1] = body[i + 1], body[i]
                yield f"statements {i + 1} and {i + 2} of block {n + 1} in the other order", new


def _blocks(tree):
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


# --- generation ------------------------------------------------------------------------------


class _Context:
    def __init__(self, tree, cell_text):
        self.axes = _axis_nodes(tree)
        self.parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        self.twins = _twins(cell_text)

    def parent_is_usub(self, node) -> bool:
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)

    def is_argument(self, node) -> bool:
        return isinstance(self.parents.get(id(node)), ast.Call)


def _twins(cell_text: str) -> dict[str, set[str]]:
    """Attribute names of self that differ from another in one character, or share a name but
    for a q/k/v letter: norm1/norm2, q_proj/k_proj/v_proj, W_q/W_k, k/v."""
    try:
        tree = ast.parse(cell_text)
    except SyntaxError:
        return {}
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Name) and n.value.id == "self"}
    out: dict[str, set[str]] = {}
    for a in names:
        for b in names:
            if a != b and len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1:
                out.setdefault(a, set()).add(b)
    return out


def _replaced(tree, index: int, new) -> ast.Module:
    """A copy of tree with its index-th node (in ast.walk order) replaced by new."""
    tree = copy.deepcopy(tree)
    target = list(ast.walk(tree))[index]
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, new)
                return ast.fix_missing_locations(tree)
            if isinstance(value, list) and any(v is target for v in value):
                setattr(parent, field, [new if v is target else v for v in value])
                return ast.fix_missing_locations(tree)
    raise AssertionError("node not found")


def mutants_of(region: Region, operators=None, counts: dict | None = None) -> list[Mutant]:
    """Every mutant the operators make of one region; the same program only once, and never
    the region itself. The first, `identity`, is the region printed unchanged: a control.
    counts: mutants numbered so far in this cell, by operator (a cell may hold two regions)."""
    tree = region.tree()
    original = region.printed(tree)
    ctx = _Context(tree, region.cell_text)
    wanted = set(operators or [*NODE_OPERATORS, "moved"])
    found: list[tuple[str, str, str]] = [("identity", "printed by ast.unparse", original)]
    seen = {original}
    for index, node in enumerate(ast.walk(tree)):
        for name, make in NODE_OPERATORS.items():
            if name not in wanted:
                continue
            for what, new in make(node, ctx):
                text = region.printed(_replaced(tree, index, new))
                if text not in seen:
                    seen.add(text)
                    found.append((name, what, text))
    if "moved" in wanted:
        for what, new in moved_statements(tree):
            text = region.printed(new)
            if text not in seen:
                seen.add(text)
                found.append(("moved", what, text))
    counts = {} if counts is None else counts
    out = []
    for name, what, text in found:
        counts[name] = counts.get(name, 0) + 1
        out.append(Mutant(f"{region.assignment}.{region.cell}.{name}.{counts[name]}",
                          region.assignment, region.cell, name, what,
                          Edit(region.cell, region.text, text), _diff(original, text)))
    return out


def _diff(before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return "\n".join(line for line in lines if not line.startswith(("---", "+++", "@@")))


def mutants(source_nb: Path, assignment: str, operators=None) -> list[Mutant]:
    """All mutants of all the notebook's solution regions, each with its expected cause."""
    from tests.mutants.expected import expected_cause

    out = []
    counts: dict[str, dict[str, int]] = {}
    for region in regions(source_nb, assignment):
        for mutant in mutants_of(region, operators, counts.setdefault(region.cell, {})):
            out.append(_with_cause(mutant, expected_cause(region, mutant)))
    return out


def _with_cause(mutant: Mutant, cause: str | None) -> Mutant:
    from dataclasses import replace

    return replace(mutant, cause=cause)


def mutated_cell(region: Region, mutant: Mutant) -> str:
    """The whole cell as the mutant hands it in."""
    return region.cell_text.replace(mutant.edit.old, mutant.edit.new, 1)
