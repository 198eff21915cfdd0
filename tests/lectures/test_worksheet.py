"""The by-hand worksheet generator: repeatable, varied, correct; the sheet gives nothing away."""

import subprocess
import sys
from fractions import Fraction
from html.parser import HTMLParser

import pytest
import torch

from grader.course import REPO
from lectures.toolkit.worksheet import make_exercise, render_key, render_sheet, solve

SEEDS = range(12)


class Tables(HTMLParser):
    """Collects every <table data-name=...> as {name: (class, [[cell text, ...], ...])}."""

    def __init__(self, text):
        super().__init__()
        self.tables, self._name, self._cell = {}, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._name = attrs["data-name"]
            self.tables[self._name] = (attrs.get("class"), [])
        elif tag == "tr" and self._name:
            self.tables[self._name][1].append([])
        elif tag == "td" and self._name:
            self._cell = []
        elif tag == "span" and self._cell is not None and attrs.get("class") == "dec":
            self._cell.append(" ")  # the decimal after the fraction: keep them apart

    def handle_endtag(self, tag):
        if tag == "table":
            self._name = None
        elif tag == "td" and self._cell is not None:
            self.tables[self._name][1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def cells(tables, name):
    """The body cells of a table (the header row has no <td>), first token of each."""
    return [[c.split()[0] if c else c for c in row] for row in tables[name][1] if row]


def simplified_attention_in_torch(ex):
    """The same simplified steps, computed independently in torch (column convention)."""
    X, W_Q, W_K, W_V = (torch.tensor(m, dtype=torch.int64) for m in (ex.X, ex.W_Q, ex.W_K,
                                                                       ex.W_V))
    Q, K, V = W_Q @ X, W_K @ X, W_V @ X  # (3, 4) each
    S = K.T @ Q  # (4 keys, 4 queries)
    scaled = torch.div(S, 2, rounding_mode="floor")
    powers = 3.0 ** scaled.double()
    A = powers / powers.sum(dim=0, keepdim=True)  # softmax-like down each column
    Z = V.double() @ A
    return dict(Q=Q, K=K, V=V, S=S, scaled=scaled, powers=powers, A=A, Z=Z)


def test_same_seed_same_exercise():
    assert make_exercise(7) == make_exercise(7)
    assert render_key(make_exercise(7)) == render_key(make_exercise(7))


def test_different_seeds_differ():
    inputs = {(ex.X, ex.W_Q, ex.W_K, ex.W_V) for ex in map(make_exercise, SEEDS)}
    assert len(inputs) == len(SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_exercise_stays_small_and_sensible(seed):
    ex = make_exercise(seed)
    assert all(0 <= s <= 7 for row in ex.scores for s in row)  # powers at most 3^3
    assert all(v in (0, 1) for row in ex.X for v in row)
    assert all(abs(v) <= 1 for W in (ex.W_Q, ex.W_K, ex.W_V) for row in W for v in row)
    assert ex.drift <= 0.15
    assert all(sum(col) == 1 for col in zip(*ex.A, strict=True))
    assert len(set(zip(*ex.A, strict=True))) == 4, "two queries got the same weights"


@pytest.mark.parametrize("seed", [0, 7, 11])
def test_key_matches_an_independent_torch_computation(seed):
    ex = make_exercise(seed)
    ref = simplified_attention_in_torch(ex)
    for field, name in [("Q", "Q"), ("K", "K"), ("V", "V"), ("scores", "S"),
                        ("scaled", "scaled")]:
        assert torch.equal(torch.tensor(getattr(ex, field)), ref[name]), field
    for field, name in [("powers", "powers"), ("A", "A"), ("Z", "Z")]:
        got = torch.tensor([[float(x) for x in row] for row in getattr(ex, field)],
                           dtype=torch.float64)
        torch.testing.assert_close(got, ref[name], msg=field)

    # and the numbers printed in the key are those numbers
    tables = Tables(render_key(ex)).tables
    for table, name in [("Q", "Q"), ("K", "K"), ("V", "V"), ("S", "S"),
                        ("floor(S/2)", "scaled")]:
        assert cells(tables, table) == [[str(v) for v in row] for row in ref[name].tolist()]
    printed_powers = cells(tables, "3^x")
    assert printed_powers[:-1] == [[str(int(v)) for v in row] for row in ref["powers"].tolist()]
    assert printed_powers[-1] == [str(int(s)) for s in ref["powers"].sum(0).tolist()]
    for table in ("A", "Z"):
        printed = torch.tensor([[float(Fraction(c)) for c in row] for row in cells(tables, table)],
                               dtype=torch.float64)
        torch.testing.assert_close(printed, ref[table], msg=table)
    exact_A = torch.softmax(ref["S"].double() / 3**0.5, dim=0)
    torch.testing.assert_close(torch.tensor(ex.A_exact, dtype=torch.float64), exact_A)


def test_solve_takes_tensors_and_handles_negative_scores():
    X = torch.tensor([[1, 0], [0, 1]])
    ex = solve(X, [[1, 0]], [[-1, 0]], [[2, 3]])
    assert ex.scores == ((-1, 0), (0, 0))
    assert ex.scaled == ((-1, 0), (0, 0))  # floor(-1/2) = -1, not 0
    assert ex.A[0][0] == Fraction(1, 3) / (Fraction(1, 3) + 1)


@pytest.mark.parametrize("seed", [0, 7])
def test_blank_sheet_contains_no_answers(seed):
    ex = make_exercise(seed)
    sheet, key = render_sheet(ex), render_key(ex)
    sheet_tables, key_tables = Tables(sheet).tables, Tables(key).tables
    answers = {n for n, (cls, _) in key_tables.items() if cls == "answer"}
    assert {"Q", "K", "V", "S", "floor(S/2)", "3^x", "A", "Z"} <= answers
    for name in answers:
        cls, rows = sheet_tables[name]
        assert cls == "answer"
        assert all(c == "" for row in rows for c in row), f"{name} is filled in on the sheet"
        assert len(rows) == len(key_tables[name][1])  # same shape: one blank cell per answer
    for z in {c for row in cells(key_tables, "Z") for c in row}:
        assert z not in sheet
    for given in ("X", "W_Q", "W_K", "W_V"):
        assert cells(sheet_tables, given) == cells(key_tables, given)
    assert "exact" not in sheet_tables and "A exact" in key_tables


def test_cli_writes_sheet_and_key(tmp_path):
    done = subprocess.run([sys.executable, "-m", "toolkit.worksheet", "--seed", "7", "--out",
                           str(tmp_path)], cwd=REPO / "lectures", capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key-7.html", "sheet-7.html"]
    assert (tmp_path / "key-7.html").read_text() == render_key(make_exercise(7))
    assert (tmp_path / "sheet-7.html").read_text() == render_sheet(make_exercise(7))


def test_matrices_html_lays_out_labelled_tables():
    from lectures.toolkit.worksheet import matrices_html, matrix_table

    table = matrix_table([[1, 2], [3, 4]], name="M", rows=["a", "b"], cols=["x", "y"])
    page = matrices_html(table, matrix_table([[0.5]], name="N", rows=["r"], cols=["c"]))
    tables = Tables(page).tables
    assert cells(tables, "M") == [["1", "2"], ["3", "4"]]
    assert cells(tables, "N") == [["0.50"]]
    assert page.startswith('<div class="ws"><style>')
