"""The cause a mutant's failure messages should name: the catalogue's, where a catalogued
mistake (tests/catalogue/catalogue.py) is the same program as the mutant.

Matching by program (the parsed cell, comments and layout aside) and not by operator keeps one
source of truth for causes: an operator alone cannot know that dim=-1 -> dim=-2 means "softmax
over the queries" in one cell and "statistics over the wrong axis" in another, but the catalogue
already says so for the mistakes it holds. Mutants the catalogue does not hold but a person has
read are in REVIEWED (keyed by the line the mutant changes, as ast.unparse prints it). A mutant
found in neither expects no cause (None); a message that still names one is reported as
`unverified`, for review (then add it to REVIEWED, or to the catalogue), not counted as wrong.
"""

from __future__ import annotations

import ast
import functools

from tests.catalogue.catalogue import MISTAKES

NO_CAUSE = "no cause"  # expected where naming any cause would be wrong
# Answers typed by hand: every mutant there changes one entry of one matrix (a typo), which none
# of the causes explains (each changes a pattern of entries): no message may name one.
TYPED_ANSWERS = {"by_hand"}

# (assignment, cell, the line removed, the line added) -> the cause its messages should name.
REVIEWED: dict[tuple[str, str, str, str], str] = {
    ("soft_select", "softmax", "z = x - x.amax(dim=dim, keepdim=True)",
     "z = x + x.amax(dim=dim, keepdim=True)"): "softmax_no_max",  # added: exp overflows
    ("soft_select", "softmax", "z = x - x.amax(dim=dim, keepdim=True)",
     "z = x - x.amax(keepdim=True)"): "softmax_global_max",
    ("soft_select", "attention_pooling",
     "weights = softmax(-diff ** 2 / (2 * bandwidth ** 2), dim=-1)",
     "weights = softmax(-diff ** 2 / (2 * bandwidth ** 2), dim=-2)"): "softmax_over_queries",
    ("soft_select", "attention_pooling",
     "weights = softmax(-diff ** 2 / (2 * bandwidth ** 2), dim=-1)",
     "weights = softmax(-diff ** 2 / (1 * bandwidth ** 2), dim=-1)"): "kernel_no_two",
    ("soft_select", "attention_pooling",
     "weights = softmax(-diff ** 2 / (2 * bandwidth ** 2), dim=-1)",
     "weights = softmax(-diff ** 2 / (2 * bandwidth ** 1), dim=-1)"): "bandwidth_not_squared",
    ("self_attention", "sdpa", "if mask is not None:", "if not mask is not None:"):
        "mask_ignored",  # and raises without a mask
    ("self_attention", "sdpa", "if mask is not None:", "if mask is None:"): "mask_ignored",
    ("self_attention", "sdpa", "scores = scores.masked_fill(~mask, float('-inf'))",
     "scores = scores"): "mask_ignored",
    ("self_attention", "mha", "y = y.transpose(1, 2).reshape(B, L, self.d_model)",
     "y = y.transpose(2, 2).reshape(B, L, self.d_model)"): "heads_merge_no_transpose",
    ("self_attention", "mha", "y = y.transpose(1, 2).reshape(B, L, self.d_model)",
     "y = y.transpose(1, 1).reshape(B, L, self.d_model)"): "heads_merge_no_transpose",
    # cosines written over the sines (odd columns left 0): not sine and cosine swapped
    ("self_attention", "positional_encoding", "pe[:, 1::2] = torch.cos(angle)",
     "pe[:, 0::2] = torch.cos(angle)"): NO_CAUSE,
    ("self_attention", "positional_encoding", "pe[:, 1::2] = torch.cos(angle)",
     "pe[:, 1 - 1::2] = torch.cos(angle)"): NO_CAUSE,
    # a statement moved: the same line removed and added (the softmax before the mask)
    ("self_attention", "sdpa", "att = torch.softmax(scores, dim=-1)",
     "att = torch.softmax(scores, dim=-1)"): "mask_ignored",
    ("rnn_attention", "additive_attention", "scores = scores.masked_fill(~mask, float('-inf'))",
     "scores = scores"): "mask_ignored",
    ("rnn_attention", "additive_attention", "weights = torch.softmax(scores, dim=-1)",
     "weights = torch.softmax(scores, dim=-1)"): "mask_ignored",
    ("rnn_attention", "additive_attention", "weights = torch.softmax(scores, dim=-1)",
     "weights = torch.softmax(scores, dim=-2)"): "softmax_over_batch",  # scores are (B, S)
    ("rnn_attention", "decoder_step", "logits = self.out(torch.cat([h, context], dim=-1))",
     "logits = self.out(torch.cat([h, context], dim=-1))"): "decoder_logits_old_state",
    ("efficient_attention", "online_softmax", "m = m_new", "m = m_new"):
        "online_sum_not_rescaled",  # m updated before l: l is rescaled by exp(0)
    ("efficient_attention", "online_softmax",
     "l = l * torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)",
     "l = l / torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)"):
        "online_rescale_flipped",  # / exp(m - m_new) is * exp(m_new - m)
    # the running sum started at m (-inf), or rescaled by m - m_new without exp: NaN as the
    # flipped rescale gives it, but not that slip
    ("efficient_attention", "online_softmax", "l = torch.zeros_like(m)", "l = m"): NO_CAUSE,
    ("efficient_attention", "online_softmax",
     "l = l * torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)",
     "l = l * (m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)"): NO_CAUSE,
    ("efficient_attention", "kv_cache", "self.k, self.v = (k, v)", "self.v, self.v = (k, v)"):
        "kv_cache_overwritten",  # self.k never set: the cache is never extended
    ("efficient_attention", "kv_cache", "self.k, self.v = (k, v)", "self.k, self.v = (k, v)"):
        "kv_cache_overwritten",  # stored before the concatenation: the past is lost
    ("efficient_attention", "cached_lm", "x = x + block.self_attn.merge(attention(q, k, v))",
     "x = x + block.self_attn.merge(attention(q, k, v))"):
        "kv_cache_overwritten",  # attended before appending: the new key and value alone
    ("transformer", "decoder", "x = self.tok_emb(idx) + self.pos_emb(positions)",
     "x = self.tok_emb(idx) + positions"): "no_positions",  # the raw indices, not embeddings
    ("transformer", "mlp", "return self.linear2(self.dropout(self.act(self.linear1(x))))",
     "return self.linear2(F.dropout(self.act(self.linear1(x)), p=self.dropout.p, "
     "training=True))"): "dropout_in_eval",
    ("tiny_gpt", "rotary", "theta = 10000.0 ** (-2 * i / d)",
     "theta = 10000.0 ** (-1 * i / d)"): "rotary_frequencies",  # the catalogued slip, as -1 * i
}


def _reviewed(assignment: str, cell: str, diff: str) -> str | None:
    removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-")]
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+")]
    if len(removed) != 1 or len(added) != 1:
        return None
    return REVIEWED.get((assignment, cell, removed[0], added[0]))


def _program(text: str) -> str | None:
    try:
        return ast.dump(ast.parse(text))
    except SyntaxError:
        return None


@functools.cache
def _catalogued(assignment: str, cell: str, cell_text: str) -> dict[str, str | None]:
    """{program: cause} of the catalogue's mistakes in this cell."""
    out = {}
    for mistake in MISTAKES:
        edit = mistake.edit
        if mistake.assignment == assignment and edit.cell == cell and edit.old in cell_text:
            program = _program(cell_text.replace(edit.old, edit.new))
            if program is not None:
                out[program] = mistake.cause
    return out


def expected_cause(region, mutant) -> str | None:
    from tests.mutants.operators import mutated_cell

    catalogued = _catalogued(region.assignment, region.cell, region.cell_text)
    program = _program(mutated_cell(region, mutant))
    if program in catalogued:
        return catalogued[program]
    if region.assignment in TYPED_ANSWERS and mutant.operator != "identity":
        return NO_CAUSE
    return _reviewed(region.assignment, region.cell, mutant.diff)
