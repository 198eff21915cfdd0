"""A figure that a text states, held against the float that a computation gives.

A model answer writes a figure rounded (0.51, 3.5e-02, 180,000); the computation behind it gives
a float whose last bits depend on the CPU: its vector kernels (AVX-512, AVX2, plain C) and the
number of threads change the order of a long sum, and a model trained for a few hundred steps
carries such a difference into its second decimal. So a test does not ask for the exact string:
`agrees(shown, value, spread)` accepts the text where rounding some value within `spread` of the
computed one gives it. Far from a rounding boundary that is the exact check; at one it allows no
more than the computation's own spread, which each test measures on several kernels and thread
counts (tests/figures_across_cpus.py) and states beside the figure. A wrong figure, a wrong
digit or a loss that did not fall still fails.

Pure Python: `make cuda-check` collects tests/solutions where only PyTorch is installed.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"^([+-]?[\d,]*\.?\d*)(?:e([+-]?\d+))?$")


def unit(shown: str) -> float:
    """The place value of the last digit written: '0.51' -> 0.01, '3.5e-02' -> 0.001,
    '1,108' -> 1."""
    match = _NUMBER.match(shown.strip())
    if not match or not any(c.isdigit() for c in match[1]):
        raise ValueError(f"not a figure: {shown!r}")
    mantissa, exponent = match[1], int(match[2] or 0)
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (exponent - decimals)


def agrees(shown: str, value: float, spread: float, *, place: float | None = None) -> bool:
    """Whether the figure written as `shown` is `value` rounded, for some value within `spread`
    (absolute) of it. `place`: the place it was rounded to when the digits do not say so (a
    count rounded to ten thousands, 180,000: place=1e4)."""
    written = float(shown.replace(",", ""))
    return abs(written - value) <= (place or unit(shown)) / 2 + spread


def table(text: str) -> dict[str, list[str]]:
    """A Markdown table's rows by their first cell: {'4': ['0.51', '1.13', '1.39'], ...}
    (the header and the rule under it left out)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.strip().startswith("|")]
    return {row[0]: row[1:] for row in rows[2:]}

