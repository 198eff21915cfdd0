"""toolkit.live: the lectures' sliders redraw without an Output widget (see its docstring)."""

import json

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from grader.course import REPO  # noqa: E402
from lectures.toolkit.live import live_figure, live_text  # noqa: E402

LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))


def test_a_moved_control_redraws_the_figure():
    drawn = []

    def draw(n, label):
        drawn.append((n, label))
        fig, ax = plt.subplots()
        ax.plot(range(n))
        ax.set(title=label, xlabel="x", ylabel="y")
        return fig

    n, label = widgets.IntSlider(value=2, min=1, max=9), widgets.Text(value="a")
    live_figure(draw, n, label)
    n.value = 5
    label.value = "b"
    assert drawn == [(2, "a"), (5, "a"), (5, "b")]
    assert plt.get_fignums() == []  # every drawn figure was closed


def test_the_figure_is_shown_at_its_own_size(monkeypatch):
    shown = []
    monkeypatch.setattr("lectures.toolkit.live.display", shown.append)

    def draw(w):
        fig, ax = plt.subplots(figsize=(w, 2), dpi=100)
        ax.set(title="t", xlabel="x", ylabel="y")
        return fig

    w = widgets.IntSlider(value=3, min=1, max=9)
    live_figure(draw, w)
    image = shown[0].children[-1]
    narrow = int(image.width)
    w.value = 6
    assert bytes(image.value[:4]) == b"\x89PNG" and 250 < narrow < int(image.width) < 650
    assert plt.get_fignums() == []  # every drawn figure was closed


def test_a_moved_control_rewrites_the_text(monkeypatch):
    shown = []
    monkeypatch.setattr("lectures.toolkit.live.display", shown.append)
    t = widgets.FloatSlider(value=1.0)
    live_text(lambda v: f"t = {v:g}", t)
    [box] = shown
    text = box.children[-1]
    assert box.children[0] is t and text.value == "t = 1"
    t.value = 0.5
    assert text.value == "t = 0.5"


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_no_lecture_captures_output_in_an_output_widget(path):
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "code")
    for call in ("interact(", "interactive_output(", "widgets.Output(", "interact_manual("):
        assert call not in code, f"{path.name} uses {call}: use toolkit.live instead"
