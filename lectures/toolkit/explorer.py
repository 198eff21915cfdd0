"""Attention weights a reader can explore on the static site, not only in a running kernel.

`attention_explorer(query_tokens, key_tokens, weights, title=...)` returns an object that a
notebook cell displays as one self-contained HTML fragment: the query tokens in a row, and
below them one row per head (and one for the mean over heads) with the key tokens shaded by
that head's weight for the selected query. Hovering, focusing (Tab, then the arrow keys) or
tapping a query token selects it; hovering or focusing a key shows its weight as a number.

The fragment loads nothing: inline CSS, a small inline script, and the data as JSON in a
`<script type="application/json">` block. It works in JupyterLab's output area (for a notebook
you ran or trust: JupyterLab runs no script of an untrusted output), in the pages Jupyter Book
builds (myst-nb writes text/html outputs into the page as they are) and opened from disk.

Tokens are data (text from real corpora): the page only ever sets them as text (textContent),
never as HTML. The JSON has <, >, & and ' escaped as \\u003c... (so no "</script>" can end
the block early) and is pure ASCII (U+2028 and U+2029 too are escaped, and the page's encoding
does not matter). Spaces, newlines, tabs and other control characters are drawn visibly
("·", "↵", "⇥", "␀"...), in grey.

Weights are rounded to 3 decimals and sent as whole thousandths (0.412 -> 412), so the
fragment is a few KB plus about 4 bytes a weight.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import torch
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

TEMPLATES = Path(__file__).parent / "templates"
MAX_WEIGHTS = 250_000  # about 1 MB of data: beyond that a page gets slow; show fewer tokens
ROW_SUM_TOL = 5e-3  # a softmax in float16/bfloat16 sums to 1 within about 1e-3
MEAN_NAME = "mean over heads"

_env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=False)
_count = itertools.count(1)


class AttentionExplorer:
    """What `attention_explorer` returns: `html` (the fragment), shown by Jupyter as text/html,
    with a one-line text/plain fallback for front ends that show no HTML."""

    def __init__(self, html: str, text: str, uid: str):
        self.html = html
        self.text = text
        self.uid = uid

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def safe_json(data) -> str:
    """JSON that can sit inside an HTML <script> block: ASCII only, with <, >, & and '
    written as \\u escapes (JSON.parse reads them back unchanged)."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for ch in "<>&'":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text  # ensure_ascii already wrote U+2028 / U+2029 as \u2028 / \u2029


def _weights_array(weights) -> np.ndarray:
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().to("cpu", torch.float64).numpy()
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"weights must be a tensor or an array of numbers ({e})") from None
    return w


def _check_tokens(name: str, tokens) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
        raise TypeError(f"{name} must be a list of strings, not {type(tokens).__name__}")
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is {type(t).__name__} ({t!r}), not a string")
    return list(tokens)


def _check_weights(w: np.ndarray, n_query: int, n_key: int) -> None:
    if w.ndim != 3:
        raise ValueError(f"weights must have shape (n_head, n_query, n_key), got shape "
                         f"{tuple(w.shape)}" + (" (for one head, pass weights[None])"
                                                if w.ndim == 2 else ""))
    n_head = w.shape[0]
    if 0 in w.shape:
        raise ValueError(f"weights has an empty axis: shape {tuple(w.shape)}")
    if w.shape[1] != n_query:
        raise ValueError(f"weights has {w.shape[1]} query rows (shape {tuple(w.shape)}, axis 1) "
                         f"but query_tokens has {n_query} tokens")
    if w.shape[2] != n_key:
        raise ValueError(f"weights has {w.shape[2]} key columns (shape {tuple(w.shape)}, axis 2)"
                         f" but key_tokens has {n_key} tokens")
    if w.size > MAX_WEIGHTS:
        raise ValueError(f"weights has {w.size:,} values (n_head * n_query * n_key), more than "
                         f"{MAX_WEIGHTS:,}: show fewer tokens or heads")
    bad = np.argwhere(~np.isfinite(w))
    if len(bad):
        h, q, k = bad[0]
        raise ValueError(f"weights must be finite: weights[{h}, {q}, {k}] = {w[h, q, k]}")
    bad = np.argwhere((w < -1e-6) | (w > 1 + 1e-6))
    if len(bad):
        h, q, k = bad[0]
        raise ValueError(f"weights must lie in [0, 1]: weights[{h}, {q}, {k}] = "
                         f"{w[h, q, k]:.4g} (scores before the softmax?)")
    sums = w.sum(axis=-1)  # (n_head, n_query)
    bad = np.argwhere(np.abs(sums - 1) > ROW_SUM_TOL)
    if len(bad):
        h, q = bad[0]
        raise ValueError(f"each row weights[h, q, :] must sum to 1 over the {n_key} keys; "
                         f"weights[{h}, {q}, :] sums to {sums[h, q]:.4g} (of {n_head} heads x "
                         f"{n_query} queries, {len(bad)} rows do not; are the axes "
                         f"(n_head, n_query, n_key)?)")


def attention_explorer(query_tokens: list[str], key_tokens: list[str], weights, *, title: str,
                       head_names: list[str] | None = None) -> AttentionExplorer:
    """An interactive chart of attention weights, for a notebook cell to display.

    weights: (n_head, n_query, n_key), a torch tensor or a numpy array, each row a
    distribution over the keys (non-negative, summing to 1). query_tokens / key_tokens: the
    text of each query / key position (for self-attention, the same list twice).
    head_names: one label a head (default "head 0", "head 1", ...). With more than one head, a
    last row shows the mean over heads. The last query starts selected.
    """
    query_tokens = _check_tokens("query_tokens", query_tokens)
    key_tokens = _check_tokens("key_tokens", key_tokens)
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"title must be a non-empty string, got {title!r}")
    w = _weights_array(weights)
    _check_weights(w, len(query_tokens), len(key_tokens))
    n_head = w.shape[0]
    if head_names is None:
        head_names = [f"head {h}" for h in range(n_head)]
    head_names = _check_tokens("head_names", head_names)
    if len(head_names) != n_head:
        raise ValueError(f"head_names has {len(head_names)} names but weights has {n_head} "
                         f"heads (shape {tuple(w.shape)}, axis 0)")

    rows = list(w)
    names = list(head_names)
    if n_head > 1:
        rows.append(w.mean(axis=0))
        names.append(MEAN_NAME)
    milli = [np.rint(np.clip(r, 0, 1) * 1000).astype(int).tolist() for r in rows]
    data = {"q": query_tokens, "k": key_tokens, "h": names, "w": milli,
            "mean": n_head > 1}
    payload = safe_json(data)
    digest = hashlib.sha1((title + payload).encode()).hexdigest()[:8]
    uid = f"attn-x-{digest}-{next(_count)}"
    html = _env.get_template("attention_explorer.html.j2").render(
        uid=uid, title=title, data=Markup(payload), uid_json=Markup(safe_json(uid)),
        n_head=n_head, n_query=len(query_tokens), n_key=len(key_tokens))
    # smaller: no indentation (the script has no multi-line string); and pure ASCII, whatever
    # the page's encoding: a title's other characters as character references
    html = "\n".join(line.strip() for line in html.splitlines() if line.strip())
    html = html.encode("ascii", "xmlcharrefreplace").decode("ascii")
    text = (f"AttentionExplorer({title!r}: {n_head} head{'s' * (n_head != 1)} x "
            f"{len(query_tokens)} queries x {len(key_tokens)} keys; interactive in HTML)")
    return AttentionExplorer(html, text, uid)
