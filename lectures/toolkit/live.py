"""Controls that redraw a figure (or rewrite a text) while the kernel runs, with no Output widget.

ipywidgets' `interact` and `interactive_output` capture what the function shows in an Output
widget. A headless run (nbclient: the tests, `make lectures`, the site build) imitates that widget
by messaging the kernel on the channel where it waits for the cell's reply, and can miss the reply
until the cell's time-out (nbclient issue #312; lecture 03 stalled that way in CI). These helpers
draw into an Image widget and write into a Textarea instead: the same sliders in JupyterLab, and
nothing for the executor to imitate.
"""

from __future__ import annotations

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display


def live_figure(draw, *controls):
    """Show `controls` and the figure `draw(*their values)` returns, redrawn whenever one moves."""
    image = widgets.Image(format="png")

    def redraw(change=None):
        fig = draw(*(c.value for c in controls))
        png = io.BytesIO()
        fig.savefig(png, format="png", bbox_inches="tight")
        plt.close(fig)
        data = png.getvalue()
        image.width = str(int.from_bytes(data[16:20], "big"))  # the PNG's own width: no stretching
        image.value = data

    for c in controls:
        c.observe(redraw, names="value")
    redraw()
    display(widgets.VBox([*controls, image]))


def live_text(write, *controls, rows: int = 4):
    """Show `controls` and the text `write(*their values)` returns, rewritten whenever one moves."""
    box = widgets.Textarea(disabled=True, rows=rows, layout=widgets.Layout(width="100%"))

    def rewrite(change=None):
        box.value = write(*(c.value for c in controls))

    for c in controls:
        c.observe(rewrite, names="value")
    rewrite()
    display(widgets.VBox([*controls, box]))
