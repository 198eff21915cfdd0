"""Figures that several lectures draw. Every figure gets a title and labelled axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch


def _array(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x)


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
    if xticks is not None:
        ax.set_xticks(range(len(xticks)), labels=[str(t) for t in xticks], rotation=90)
    if yticks is not None:
        ax.set_yticks(range(len(yticks)), labels=[str(t) for t in yticks])
    if annotate is None:
        annotate = w.shape[0] <= 8 and w.shape[1] <= 8
    if annotate:
        mid = (np.nanmax(w) + np.nanmin(w)) / 2
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if w[i, j] > mid else "white")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def heatmaps(matrices, titles, *, suptitle: str, xlabel: str = "key", ylabel: str = "query",
             ncols: int | None = None, **kwargs):
    """Several heatmaps side by side (for example one per head), sharing one colour scale."""
    matrices = [_array(m) for m in matrices]
    n = len(matrices)
    ncols = ncols or n
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
    vmax = kwargs.pop("vmax", max(float(np.nanmax(m)) for m in matrices))
    for ax, m, title in zip(axes.flat, matrices, titles, strict=False):
        heatmap(m, ax, title=title, xlabel=xlabel, ylabel=ylabel, vmax=vmax, colorbar=False,
                **kwargs)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(suptitle)
    fig.tight_layout()
    return fig
