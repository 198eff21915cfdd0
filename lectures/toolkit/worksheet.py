"""Fresh self-attention exercises to work by hand, as a printable sheet and an answer key.

In the style of Tom Yeh's "AI by Hand" exercises: four tokens with small integer features
(tokens are the COLUMNS of X, as on paper), integer projections W_Q, W_K, W_V, and two shortcuts
that keep the arithmetic on paper small:

- scale the scores with floor(x / 2) instead of dividing by sqrt(d_k) = sqrt(3) ~ 1.73;
- exponentiate with 3^x instead of e^x, then divide each column by its sum.

Every step is computed exactly (integers, and fractions for the weights), so the key shows what
a student would write. `make_exercise` draws the numbers from a seed and keeps only draws where
the arithmetic stays small (every score between 0 and 7, so no power above 3^3 = 27) and the
shortcuts stay close to the exact softmax (no weight off by more than 0.15), so an instructor can
hand out a fresh sheet each term:

    python -m toolkit.worksheet --seed 7 --out DIR     (from lectures/)

writes DIR/sheet-7.html (blank cells to fill in) and DIR/key-7.html (every step filled in).
"""

from __future__ import annotations

import argparse
import html
import math
import random
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

N_TOKENS = 4  # columns of X
D_IN = 5  # features per token (rows of X)
D_K = 3  # rows of W_Q, W_K, W_V: the shortcut floor(x/2) stands in for x / sqrt(3)
MAX_SCORE = 7  # floor(7/2) = 3, so the largest power to work out is 3^3 = 27
MAX_DRIFT = 0.15  # largest allowed |shortcut weight - exact softmax weight|
W_ENTRIES, W_ODDS = (-1, 0, 1), (1, 3, 3)  # projections: mostly 0 and 1, a few -1

Matrix = tuple[tuple, ...]


# ---------------------------------------------------------------- exact arithmetic on tuples

def _matmul(a: Matrix, b: Matrix) -> Matrix:
    cols = tuple(zip(*b, strict=True))
    return tuple(tuple(sum(x * y for x, y in zip(row, col, strict=True)) for col in cols)
                 for row in a)


def _transpose(a: Matrix) -> Matrix:
    return tuple(zip(*a, strict=True))


def _as_matrix(m) -> Matrix:
    """Nested lists, tuples or an integer tensor/array -> a tuple of tuples of Python ints."""
    if hasattr(m, "tolist"):
        m = m.tolist()
    return tuple(tuple(int(x) for x in row) for row in m)


def _power3(e: int):
    return 3**e if e >= 0 else Fraction(1, 3**-e)


@dataclass(frozen=True)
class Exercise:
    """One exercise and every step of its solution, in the column convention (tokens are
    columns): Q = W_Q X, K = W_K X, V = W_V X, scores = K^T Q (row i: key i, column j: query j),
    scaled = floor(scores / 2), powers = 3^scaled, A = powers / column sums, Z = V A.

    Integer steps hold ints; A and Z hold exact Fractions. A_exact and Z_exact are the
    unsimplified floats (softmax(scores / sqrt(d_k)) down each column) to compare against.
    """

    seed: int | None
    X: Matrix
    W_Q: Matrix
    W_K: Matrix
    W_V: Matrix
    Q: Matrix
    K: Matrix
    V: Matrix
    scores: Matrix
    scaled: Matrix
    powers: Matrix
    column_sums: tuple
    A: Matrix
    Z: Matrix
    A_exact: Matrix
    Z_exact: Matrix

    @property
    def drift(self) -> float:
        """Largest |shortcut weight - exact weight|: how far the paper shortcuts lead."""
        return max(abs(float(a) - e) for ra, re in zip(self.A, self.A_exact, strict=True)
                   for a, e in zip(ra, re, strict=True))


def solve(X, W_Q, W_K, W_V, seed: int | None = None) -> Exercise:
    """Work every step of the by-hand computation exactly. X is (d_in, n): tokens are columns."""
    X, W_Q, W_K, W_V = (_as_matrix(m) for m in (X, W_Q, W_K, W_V))
    Q, K, V = _matmul(W_Q, X), _matmul(W_K, X), _matmul(W_V, X)  # (d_k, n) each
    scores = _matmul(_transpose(K), Q)  # (n keys, n queries)
    scaled = tuple(tuple(s // 2 for s in row) for row in scores)  # floor, also for s < 0
    powers = tuple(tuple(_power3(s) for s in row) for row in scaled)
    column_sums = tuple(sum(col) for col in zip(*powers, strict=True))
    A = tuple(tuple(Fraction(p) / c for p, c in zip(row, column_sums, strict=True))
              for row in powers)  # each column sums to one
    Z = _matmul(V, A)
    d_k = len(Q)
    exps = [[math.exp(s / math.sqrt(d_k)) for s in row] for row in scores]
    sums = [sum(col) for col in zip(*exps, strict=True)]
    A_exact = tuple(tuple(e / c for e, c in zip(row, sums, strict=True)) for row in exps)
    Z_exact = _matmul(V, A_exact)
    return Exercise(seed, X, W_Q, W_K, W_V, Q, K, V, scores, scaled, powers, column_sums, A, Z,
                    A_exact, Z_exact)


def _draw(rng: random.Random) -> tuple[Matrix, ...]:
    X = tuple(tuple(rng.choice((0, 1)) for _ in range(N_TOKENS)) for _ in range(D_IN))
    Ws = tuple(tuple(tuple(rng.choices(W_ENTRIES, W_ODDS)[0] for _ in range(D_IN))
                     for _ in range(D_K)) for _ in range(3))
    return (X, *Ws)


def _distinct_columns(m: Matrix) -> bool:
    return len(set(_transpose(m))) == len(m[0])


def _interesting(X, Q, K, V, scores) -> bool:
    """Small arithmetic, and nothing that makes steps repeat or attention trivial: distinct
    tokens, queries, keys and values; every score in 0..MAX_SCORE; in every column of the
    scaled scores at least two different values, and no two columns equal up to a shift (the
    softmax ignores shifts, so each query gets its own weights); no row of V constant."""
    scaled = tuple(tuple(s // 2 for s in row) for row in scores)
    shifted = _transpose(tuple(tuple(s - min(col) for s in col) for col in _transpose(scaled)))
    return (all(any(t) for t in _transpose(X))
            and all(_distinct_columns(m) for m in (X, Q, K, V, shifted))
            and all(0 <= s <= MAX_SCORE for row in scores for s in row)
            and all(len(set(col)) > 1 for col in _transpose(scaled))
            and all(len(set(row)) > 1 for row in V))


def make_exercise(seed: int) -> Exercise:
    """A fresh exercise: the same seed always gives the same numbers."""
    rng = random.Random(seed)
    for _ in range(100_000):  # about one draw in a hundred passes
        X, W_Q, W_K, W_V = _draw(rng)
        Q, K, V = _matmul(W_Q, X), _matmul(W_K, X), _matmul(W_V, X)
        if not _interesting(X, Q, K, V, _matmul(_transpose(K), Q)):
            continue
        ex = solve(X, W_Q, W_K, W_V, seed=seed)
        if ex.drift <= MAX_DRIFT:
            return ex
    raise RuntimeError(f"no acceptable exercise found for seed {seed}")


# ------------------------------------------------------------------------------- rendering

CSS = """
.ws { font-family: "Helvetica Neue", Arial, sans-serif; color: #111; max-width: 60em; }
.ws h1 { font-size: 1.4em; margin: 0 0 .2em 0; }
.ws h2 { font-size: 1.05em; margin: 0 0 .4em 0; }
.ws .meta { color: #555; margin-bottom: .8em; }
.ws .name { margin: .6em 0 1em 0; }
.ws .step { border-top: 1px solid #bbb; padding: .6em 0 .8em 0; break-inside: avoid;
            page-break-inside: avoid; }
.ws .hint { color: #444; font-size: .9em; margin: 0 0 .5em 0; }
.ws .row { display: flex; align-items: center; gap: .8em; flex-wrap: wrap; }
.ws .op { font-size: 1.4em; }
.ws figure { margin: 0; }
.ws figcaption { font-size: .85em; text-align: center; margin-bottom: .2em; }
.ws table { border-collapse: collapse; }
.ws th { font-weight: normal; color: #666; font-size: .8em; padding: 0 .3em; }
.ws td { border: 1px solid #333; min-width: 2.2em; height: 1.9em; text-align: center;
         padding: 0 .3em; font-variant-numeric: tabular-nums; }
.ws table.answer td { min-width: 3.6em; }
.ws td.blank { background: #f6f6f6; }
.ws tr.sum td { border-top: 2px solid #333; }
.ws .v { display: block; }
.ws .dec { display: block; color: #666; font-size: .75em; }
.ws .note { font-size: .85em; color: #444; }
@media print {
  @page { size: A4; margin: 14mm; }
  .ws { max-width: none; font-size: 10.5pt; }
  .ws td.blank { background: none; }
}
"""


def _fmt(x) -> str:
    if isinstance(x, Fraction) and x.denominator != 1:
        return f"{x.numerator}/{x.denominator}"
    return str(int(x)) if isinstance(x, int | Fraction) else f"{x:.2f}"


def matrix_table(m, *, name: str, rows, cols, blank: bool = False, answer: bool = False,
                 cell=_fmt, sums=None) -> str:
    """An HTML table for matrix `m` with row and column labels.

    blank leaves every cell empty (to fill in); answer marks the table as part of the
    solution. cell formats one entry (returning HTML). sums adds a last row (column sums).
    """
    cls = "answer" if answer else "given"
    out = [f'<figure><figcaption>{name}</figcaption><table class="{cls}" data-name="{name}">',
           "<tr><th></th>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in cols) + "</tr>"]
    body = [(r, row, "") for r, row in zip(rows, m, strict=True)]
    if sums is not None:
        body.append(("sum", sums, ' class="sum"'))
    for label, row, tr in body:
        tds = "".join('<td class="blank"></td>' if blank else f"<td>{cell(x)}</td>"
                      for x in row)
        out.append(f"<tr{tr}><th>{html.escape(str(label))}</th>{tds}</tr>")
    out.append("</table></figure>")
    return "\n".join(out)


def matrices_html(*tables: str) -> str:
    """Tables from `matrix_table` side by side, styled like the worksheet: for showing small
    matrices in a notebook with IPython.display.HTML (numbers in a grid read better than a
    printed tensor)."""
    return f'<div class="ws"><style>{CSS}</style><div class="row">{"".join(tables)}</div></div>'


def _labels(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i + 1}" for i in range(n)]


def _fraction_cells(m: Matrix, column_sums) -> Matrix:
    """Entries as 'numerator/column sum' (the unreduced form a student writes) and a decimal."""
    return tuple(tuple(f'<span class="v">{_fmt(x * c)}/{_fmt(c)}</span>'
                       f'<span class="dec">{float(x):.2f}</span>'
                       for x, c in zip(row, column_sums, strict=True)) for row in m)


def _render(ex: Exercise, key: bool) -> str:
    d_in, n = len(ex.X), len(ex.X[0])
    d_k = len(ex.Q)
    tok, feat, dim = _labels("x", n), _labels("f", d_in), _labels("d", d_k)
    keys, queries = _labels("k", n), _labels("q", n)
    blank = not key

    def given(m, name, rows, cols):
        return matrix_table(m, name=name, rows=rows, cols=cols)

    def answer(m, name, rows, cols, **kw):
        kw.setdefault("cell", lambda x: x if isinstance(x, str) else _fmt(x))
        return matrix_table(m, name=name, rows=rows, cols=cols, blank=blank, answer=True, **kw)

    def step(title, hint, *parts):
        joined = "\n".join(p if p.startswith("<") else f'<span class="op">{p}</span>'
                           for p in parts)
        return (f'<section class="step"><h2>{title}</h2><p class="hint">{hint}</p>'
                f'<div class="row">{joined}</div></section>')

    X = given(ex.X, "X", feat, tok)
    sections = []
    for i, (w, r, letter) in enumerate(((ex.W_Q, ex.Q, "Q"), (ex.W_K, ex.K, "K"),
                                        (ex.W_V, ex.V, "V"))):
        sections.append(step(
            f"{i + 1}. {letter} = W<sub>{letter}</sub> X",
            f"Entry (d, x) is row d of W<sub>{letter}</sub> dotted with column x of X.",
            given(w, f"W_{letter}", dim, feat), "&times;", X, "=",
            answer(r, letter, dim, tok)))
    sections.append(step(
        "4. Scores S = K<sup>T</sup> Q",
        "Entry (k<sub>i</sub>, q<sub>j</sub>) is column i of K dotted with column j of Q: how "
        "well key i matches query j. Each column belongs to one query.",
        answer(ex.scores, "S", keys, queries)))
    sections.append(step(
        f"5. Scale: floor(S / 2) instead of S / &radic;{d_k}",
        f"&radic;{d_k} &asymp; {math.sqrt(d_k):.2f}; halve and round down (floor(-1/2) = -1).",
        answer(ex.scaled, "floor(S/2)", keys, queries)))
    sections.append(step(
        "6. Exponentiate: 3<sup>x</sup> instead of e<sup>x</sup>, then sum each column",
        "Raise 3 to each entry; the last row holds each column's sum.",
        answer(ex.powers, "3^x", keys, queries, sums=ex.column_sums)))
    sections.append(step(
        "7. Normalise: A = each entry / its column's sum",
        "Write each weight as a fraction of its column's sum; every column of A sums to 1.",
        answer(_fraction_cells(ex.A, ex.column_sums), "A", keys, queries)))
    sections.append(step(
        "8. Output Z = V A",
        "Column j of Z is the mix of the value columns v<sub>i</sub> with weights from column j "
        "of A; keep the column's sum as the denominator.",
        answer(_fraction_cells(ex.Z, ex.column_sums), "Z", dim, tok)))
    if key:
        sections.append(step(
            "Check: the exact computation",
            f"softmax(S / &radic;{d_k}) down each column and V times it, in decimals. The "
            f"shortcuts move no weight by more than {ex.drift:.2f}.",
            matrix_table(ex.A_exact, name="A exact", rows=keys, cols=queries),
            matrix_table(ex.Z_exact, name="Z exact", rows=dim, cols=tok)))

    kind = "answer key" if key else "worksheet"
    seed = "" if ex.seed is None else f" {ex.seed}"
    name = "" if key else ('<p class="name">Name: ______________________ '
                           'Date: ____________</p>')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Self-attention by hand: {kind}{seed}</title>
<style>{CSS}</style></head>
<body><div class="ws">
<h1>Self-attention by hand: {kind}{seed}</h1>
<p class="meta">Four tokens x1&ndash;x4 are the columns of X. Work down the page; every number
stays a small integer until step 7, where weights become fractions.</p>
{name}
{"".join(sections)}
<p class="note">Generated by lectures/toolkit/worksheet.py (python -m toolkit.worksheet --seed
{ex.seed}).</p>
</div></body></html>
"""


def render_sheet(ex: Exercise) -> str:
    """The blank worksheet as a standalone HTML page: the inputs given, every answer cell empty."""
    return _render(ex, key=False)


def render_key(ex: Exercise) -> str:
    """The answer key as a standalone HTML page: every intermediate step filled in."""
    return _render(ex, key=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.worksheet", description=__doc__
                                     .split("\n\n")[0])
    parser.add_argument("--seed", type=int, nargs="+", required=True,
                        help="one exercise per seed")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder to write into")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seed:
        ex = make_exercise(seed)
        for kind, render in (("sheet", render_sheet), ("key", render_key)):
            path = args.out / f"{kind}-{seed}.html"
            path.write_text(render(ex), encoding="utf-8")
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
