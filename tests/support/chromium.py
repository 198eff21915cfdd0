"""Debian's chromium for the browser suites (tests/browser, tests/site): where it is, how it starts.

Without the background-networking flags chromium keeps trying to reach Google's services, which a
closed CI network refuses.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 90_000  # per step; CI has two cores


@contextlib.contextmanager
def chromium(extra_args: tuple[str, ...] = ()):
    """One headless chromium with a fresh profile (a Playwright browser context)."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True,
            args=[*CHROMIUM_ARGS, *extra_args], viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(TIMEOUT_MS)
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)
