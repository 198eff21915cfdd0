"""Sample classes for the assignments, made from the source notebooks and their releases.

Each student is the released notebook with answers filled in: the source's solutions, changed
by small edits that reproduce a mistake real students make. Building them from the current
notebooks (instead of storing copies) keeps the demo in step with the assignment; an edit
whose target text is gone fails loudly.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import nbformat


@dataclass(frozen=True)
class Edit:
    cell: str  # grade_id of the solution cell
    old: str
    new: str


@dataclass(frozen=True)
class Student:
    id: str
    story: str
    expect: str  # "full", "zero", "partial"
    blank: bool = False
    edits: list[Edit] = field(default_factory=list)


MARK_SCHEME = "**Mark scheme**"  # in a written answer, what follows is for the instructor

SELF_ATTENTION_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "softmax over the wrong axis", "partial", edits=[
        Edit("sdpa", "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")]),
    Student("dave", "forgot the 1/sqrt(d) scale", "partial", edits=[
        Edit("sdpa", "q @ k.transpose(-2, -1) / math.sqrt(d)", "q @ k.transpose(-2, -1)")]),
    Student("erin", "notebook raises early (a leftover debug line)", "partial", edits=[
        Edit("causal_mask", "def causal_mask(", "print(T)\n\n\ndef causal_mask(")]),
    Student("frank", "split the heads without the transpose", "partial", edits=[
        Edit("mha", "x.view(B, -1, self.n_head, self.d_head).transpose(1, 2)",
             "x.view(B, self.n_head, -1, self.d_head)"),
        Edit("mha", "y.transpose(1, 2).reshape(B, L, self.d_model)",
             "y.reshape(B, L, self.d_model)")]),
    Student("grace", "mask applied after the softmax", "partial", edits=[
        Edit("sdpa",
             "    if mask is not None:\n"
             "        scores = scores.masked_fill(~mask, float(\"-inf\"))\n"
             "    att = torch.softmax(scores, dim=-1)",
             "    att = torch.softmax(scores, dim=-1)\n"
             "    if mask is not None:\n"
             "        att = att.masked_fill(~mask, 0.0)")]),
]


def _solution_text(source_cell) -> str:
    """The source cell's answer: code without nbgrader's solution markers, or a written
    answer without its mark scheme."""
    if source_cell.cell_type == "markdown":
        return source_cell.source.split(MARK_SCHEME)[0].rstrip()
    keep = [line for line in source_cell.source.splitlines()
            if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
    return "\n".join(keep)


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def make_submission(source_nb: Path, released_nb: Path, student: Student):
    """The released notebook as `student` would hand it in."""
    released = nbformat.read(released_nb, as_version=4)
    if student.blank:
        return released
    source = {_grade_id(c): c for c in nbformat.read(source_nb, as_version=4).cells}
    nb = copy.deepcopy(released)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = _solution_text(source[_grade_id(cell)])
    by_id = {_grade_id(c): c for c in nb.cells}
    for edit in student.edits:
        cell = by_id.get(edit.cell)
        if cell is None or edit.old not in cell.source:
            raise ValueError(f"sample student {student.id}: cannot find {edit.old!r} in cell "
                             f"{edit.cell!r} of {source_nb}; update grader/demo/sample_class.py")
        cell.source = cell.source.replace(edit.old, edit.new)
    return nb


def write_class(source_nb: Path, released_nb: Path, students: list[Student], to: Path,
                assignment: str) -> Path:
    """Write to/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb for every student (nbgrader's layout)."""
    for student in students:
        folder = to / student.id / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(make_submission(source_nb, released_nb, student),
                       folder / released_nb.name)
    return to

SOFT_SELECT_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "softmax without subtracting the maximum", "partial", edits=[
        Edit("softmax", "z = x - x.amax(dim=dim, keepdim=True)", "z = x")]),
    Student("dave", "multiplied by the temperature", "partial", edits=[
        Edit("soft_select", "/ temperature", "* temperature")]),
    Student("erin", "kernel without the minus sign", "partial", edits=[
        Edit("attention_pooling", "softmax(-diff**2", "softmax(diff**2")]),
]

BY_HAND_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "scores transposed (Q^T K); later steps follow from them", "partial",
            edits=[Edit("answer_scores", "[[1, 4, 1, 2], [5, 4, 3, 1], [0, 2, 0, 1], [2, 1, 1, 0]]",
                        "[[1, 5, 0, 2], [4, 4, 2, 1], [1, 3, 0, 1], [2, 1, 1, 0]]")]),
    Student("dave", "normalised the rows of A; Z computed from that A", "partial", edits=[
        Edit("answer_A", "[[1/14, 9/22, 1/6, 3/6],\n     [9/14, 9/22, 3/6, 1/6],\n"
             "     [1/14, 3/22, 1/6, 1/6],\n     [3/14, 1/22, 1/6, 1/6]]",
             "[[0.071, 0.643, 0.071, 0.214], [0.409, 0.409, 0.136, 0.045],\n"
             "     [0.167, 0.5, 0.167, 0.167], [0.5, 0.167, 0.167, 0.167]]"),
        Edit("answer_Z", "[[1.64, 1.41, 1.50, 1.17],\n     [0.71, 0.82, 0.67, 0.67],\n"
             "     [-0.57, -0.27, -0.33, 0.00]]",
             "[[1.556, 2.128, 0.677, 0.638], [0.48, 1.052, 0.207, 0.259],\n"
             "     [-0.242, 0.091, 0.031, 0.122]]")]),
]

RNN_ATTENTION_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "additive attention without the tanh", "partial", edits=[
        Edit("additive_attention", "torch.tanh(self.W_q(query).unsqueeze(1) + self.W_k(keys))",
             "self.W_q(query).unsqueeze(1) + self.W_k(keys)")]),
    Student("dave", "flattened the feature grid with reshape", "partial", edits=[
        Edit("grid_attention", "features.flatten(2).transpose(1, 2)",
             "features.reshape(B, H * W, C)")]),
    Student("erin", "padding filled with 0 instead of -inf", "partial", edits=[
        Edit("additive_attention", 'scores.masked_fill(~mask, float("-inf"))',
             "scores.masked_fill(~mask, 0.0)")]),
]

TRANSFORMER_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "LayerNorm with the unbiased variance", "partial", edits=[
        Edit("layernorm", "var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)",
             "var = x.var(dim=-1, keepdim=True)")]),
    Student("dave", "pre-norm and post-norm swapped", "partial", edits=[
        Edit("block", "if self.norm_first:", "if not self.norm_first:")]),
    Student("erin", "dropout left on in evaluation", "partial", edits=[
        Edit("mlp", "self.dropout(self.act(self.linear1(x)))",
             "F.dropout(self.act(self.linear1(x)), p=0.1)")]),
]

EFFICIENT_ATTENTION_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "running sum not rescaled when the maximum grows", "partial", edits=[
        Edit("online_softmax", "l * torch.exp(m - m_new) + ", "l + ")]),
    Student("dave", "causal mask flipped inside the tiles", "partial", edits=[
        Edit("tiled_attention", "s.masked_fill(~may_attend,", "s.masked_fill(may_attend,")]),
    Student("erin", "one big tile: the whole score matrix at once", "partial", edits=[
        Edit("tiled_attention", "    L, S = q.size(-2), k.size(-2)\n",
             "    L, S = q.size(-2), k.size(-2)\n    block_q, block_k = L, S\n")]),
    Student("frank", "KV cache overwritten instead of extended", "partial", edits=[
        Edit("kv_cache", "        if self.k is not None:", "        if False:")]),
]

TINY_GPT_CLASS = [
    Student("alice", "perfect: the source solution", "full"),
    Student("bob", "blank: the release, untouched", "zero", blank=True),
    Student("carol", "rotary pairs taken as the two halves of the vector", "partial", edits=[
        Edit("rotary",
             "x[..., 0::2], x[..., 1::2]", "x[..., : d // 2], x[..., d // 2:]"),
        Edit("rotary", "torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)",
             "torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)[..., None]")]),
    Student("dave", "causal mask not shifted by the cached positions", "partial", edits=[
        Edit("attention", ".tril(diagonal=t)", ".tril()")]),
    Student("erin", "key heads repeated as a block instead of one per group", "partial", edits=[
        Edit("attention", "k.repeat_interleave(group, dim=1)", "k.repeat(1, group, 1, 1)"),
        Edit("attention", "v.repeat_interleave(group, dim=1)", "v.repeat(1, group, 1, 1)")]),
    Student("frank", "generation feeds the whole sequence again with the cache", "partial",
            edits=[Edit("generate", "model(next_id, k_cache, v_cache)",
                        "model(idx, k_cache, v_cache)")]),
]

# In the order of the course.
SAMPLE_CLASSES: dict[str, list[Student]] = {
    "soft_select": SOFT_SELECT_CLASS,
    "by_hand": BY_HAND_CLASS,
    "rnn_attention": RNN_ATTENTION_CLASS,
    "self_attention": SELF_ATTENTION_CLASS,
    "transformer": TRANSFORMER_CLASS,
    "efficient_attention": EFFICIENT_ATTENTION_CLASS,
    "tiny_gpt": TINY_GPT_CLASS,
}
