"""Figures that several lectures draw. Every figure gets a title and labelled axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import MaxNLocator


def _array(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x)


def _extend(lo: float, hi: float, vmin: float | None, vmax: float | None) -> str:
    """Which ends of the colour bar get an arrow: values beyond vmin / vmax are clipped."""
    below = vmin is not None and lo < vmin
    above = vmax is not None and hi > vmax
    return {(False, False): "neither", (True, False): "min", (False, True): "max"}.get(
        (below, above), "both")


def _text_colour(image, value) -> str:
    """Black on light cells, white on dark ones, judged from the colour the cell is painted."""
    r, g, b, _ = image.cmap(image.norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def heatmap(weights, ax=None, *, title: str, xlabel: str = "key", ylabel: str = "query",
            xticks=None, yticks=None, annotate: bool | None = None, cmap: str = "viridis",
            vmin: float | None = 0.0, vmax: float | None = None, colorbar: bool = True):
    """Draw a (rows, cols) weight matrix, e.g. attention weights (queries x keys).

    xticks / yticks: labels for the columns / rows (tokens, positions). annotate writes the
    values in the cells (default: when the matrix is at most 8 x 8).
    """
    w = _array(weights)
    if w.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {w.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.5 * w.shape[1] + 2.5, 0.5 * w.shape[0] + 1.5))
    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    # rows and columns are numbered by whole numbers: no ticks between two cells (like 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if xticks is not None:
        ax.set_xticks(range(len(xticks)), labels=[str(t) for t in xticks], rotation=90)
    if yticks is not None:
        ax.set_yticks(range(len(yticks)), labels=[str(t) for t in yticks])
    if annotate is None:
        annotate = w.shape[0] <= 8 and w.shape[1] <= 8
    if annotate:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color=_text_colour(image, w[i, j]))
    if colorbar:
        extend = _extend(np.nanmin(w), np.nanmax(w), vmin, vmax)
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, extend=extend)
    return ax


def heatmaps(matrices, titles, *, suptitle: str, xlabel: str = "key", ylabel: str = "query",
             ncols: int | None = None, colorbar: bool = True, **kwargs):
    """Several heatmaps side by side (for example one per head), on one colour scale.

    Every panel maps values to colours alike (vmin / vmax are shared: vmin 0 unless given,
    None for the smallest value of all; vmax the largest), so one colour bar, to the right
    of the grid, reads for all of them; an arrow at an end of it marks clipped values.
    """
    matrices = [_array(m) for m in matrices]
    n = len(matrices)
    ncols = ncols or n
    nrows = (n + ncols - 1) // ncols
    # constrained layout leaves room for the suptitle and the shared colour bar
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols + 0.8, 3.0 * nrows),
                             squeeze=False, layout="constrained")
    lo = min(float(np.nanmin(m)) for m in matrices)
    hi = max(float(np.nanmax(m)) for m in matrices)
    vmin = kwargs.pop("vmin", 0.0)
    vmax = kwargs.pop("vmax", None)
    vmin = lo if vmin is None else vmin
    vmax = hi if vmax is None else vmax
    for ax, m, title in zip(axes.flat, matrices, titles, strict=False):
        heatmap(m, ax, title=title, xlabel=xlabel, ylabel=ylabel, vmin=vmin, vmax=vmax,
                colorbar=False, **kwargs)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    if colorbar:
        fig.colorbar(axes.flat[0].images[0], ax=axes, shrink=0.9,
                     extend=_extend(lo, hi, vmin, vmax))
    fig.suptitle(suptitle)
    return fig
