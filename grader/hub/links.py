"""The formgrader's links, opened outside JupyterLab, reach the instructor's JupyterLab.

nbgrader's formgrader, in a page of its own (not in JupyterLab's frame, where its links ask
JupyterLab to open the path), links a folder or notebook as /tree/PATH, /notebooks/PATH or
/edit/PATH: paths of a classic Jupyter server at the site's root. On a hub the site's root is
JupyterHub's, and those paths were 404s. The hub answers them (its proxy hands unknown paths to
the hub, which moves them under /hub/) with a redirect to the same path in the logged-in user's
own JupyterLab (JupyterHub's /hub/user-redirect/)."""

from __future__ import annotations

from urllib.parse import quote

from jupyterhub.handlers import BaseHandler
from jupyterhub.utils import url_path_join

KINDS = ("tree", "notebooks", "edit")


class ClassicLinkHandler(BaseHandler):
    def get(self, path: str):
        self.redirect(url_path_join(self.hub.base_url, "user-redirect", "lab", "tree",
                                    quote(path)))


def handlers() -> list[tuple[str, type]]:
    """For JupyterHub.extra_handlers (served below the hub's prefix, /hub/)."""
    return [(rf"/{kind}/(.*)", ClassicLinkHandler) for kind in KINDS]
