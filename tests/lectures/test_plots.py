"""toolkit.plots: heatmaps read right (one shared scale and colour bar, legible cell values)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from lectures.toolkit.plots import heatmap, heatmaps


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def colour_bars(fig) -> list:
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def test_heatmap_has_its_colour_bar_and_labels():
    ax = heatmap(torch.softmax(torch.randn(3, 4), -1), title="weights")
    assert len(colour_bars(ax.figure)) == 1
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("weights", "key", "query")


def test_heatmaps_share_one_colour_bar_and_one_scale():
    mats = [np.full((2, 2), 0.2), np.array([[0.0, 0.9], [0.5, 0.1]]), np.eye(2) * 0.4]
    fig = heatmaps(mats, ["a", "b", "c"], suptitle="three", ncols=2)
    bars = colour_bars(fig)
    assert len(bars) == 1, "one colour bar for the whole grid"
    images = [ax.images[0] for ax in fig.axes if ax.images and ax not in bars]
    assert len(images) == 3
    assert {(im.norm.vmin, im.norm.vmax) for im in images} == {(0.0, 0.9)}
    assert bars[0].get_ylim() == pytest.approx((0.0, 0.9))
    assert fig.get_suptitle() == "three"
    hidden = [ax for ax in fig.axes if not ax.axison]
    assert len(hidden) == 1, "the empty fourth slot of the 2 x 2 grid is hidden"


def test_heatmaps_vmin_none_takes_the_smallest_value_of_all():
    fig = heatmaps([np.array([[-1.0, 2.0]]), np.array([[0.5, 3.0]])], ["x", "y"],
                   suptitle="scores", vmin=None)
    norms = {(ax.images[0].norm.vmin, ax.images[0].norm.vmax) for ax in fig.axes if ax.images}
    assert norms == {(-1.0, 3.0)}


def test_heatmaps_without_colour_bar():
    fig = heatmaps([np.eye(2)], ["I"], suptitle="identity", colorbar=False)
    assert not colour_bars(fig)


@pytest.mark.parametrize("cmap", ["viridis", "gray", "gray_r"])
def test_cell_values_are_written_in_a_contrasting_colour(cmap):
    """Dark text on light cells, light text on dark cells, whatever the colour map."""
    w = np.array([[0.0, 1.0]])
    ax = heatmap(w, title="contrast", cmap=cmap, vmax=1.0)
    image = ax.images[0]
    for text in ax.texts:
        value = float(text.get_text())
        r, g, b, _ = image.cmap(image.norm(value))
        light_cell = 0.299 * r + 0.587 * g + 0.114 * b > 0.5
        assert text.get_color() == ("black" if light_cell else "white"), (cmap, value)
    assert len(ax.texts) == 2


def test_clipped_values_get_an_arrow_on_the_colour_bar():
    """A colour bar that ends at vmax while some weights exceed it says so (extend="max")."""
    fig = heatmaps([np.array([[0.1, 0.9]]), np.array([[0.2, 0.3]])], ["a", "b"],
                   suptitle="clipped", vmax=0.5)
    assert colour_bars(fig)[0]._colorbar.extend == "max"
    ax = heatmap(np.array([[-0.5, 0.5]]), title="below vmin")
    assert colour_bars(ax.figure)[0]._colorbar.extend == "min"
    ax = heatmap(np.array([[0.0, 0.5]]), title="in range", vmax=1.0)
    assert colour_bars(ax.figure)[0]._colorbar.extend == "neither"


def test_unlabelled_rows_and_columns_get_whole_number_ticks():
    ax = heatmap(np.ones((3, 6)), title="no labels")
    ax.figure.canvas.draw()
    for ticks in (ax.get_xticks(), ax.get_yticks()):
        assert len(ticks) > 1 and all(float(t).is_integer() for t in ticks), ticks
