"""A Jupyter server extension: the custom.css of the grader's servers (`make lab`, the hub's),
so that nbgrader's Validate dialog wraps a long message instead of cutting it at its right edge.

The dialog (nbgrader's lab extension) puts each failing cell's source and error in a <pre>
inside #validation-message with the browser's default `white-space: pre`: a message wider than
the dialog runs off its edge, to be read only by scrolling sideways. JupyterLab links
`custom/custom.css` into its page when LabApp.custom_css is on (Notebook 7 always does), and
Notebook 7's handler serves that file from the user's ~/.jupyter only. This extension, loaded
before both (jupyter_server loads extensions by name), answers that URL first: our rules, then
the user's own ~/.jupyter/custom/custom.css, if there is one. `grader lab` and the hub's
servers enable it (`EXTENSION`) and turn LabApp.custom_css on (`LAB`).
"""

from __future__ import annotations

from pathlib import Path

CUSTOM_CSS = """\
/* The grader's (grader/servers/lab_style.py): long messages in nbgrader's Validate dialog wrap at
the
   dialog's edge instead of running past it. */
#validation-message pre {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
}
"""

# What a server's configuration adds: this extension, in ServerApp.jpserver_extensions (a
# jupyter_server_config file), and LabApp's setting, in a jupyter_lab_config file (LabApp reads
# its own, not the server's).
EXTENSION = {"grader.servers.lab_style": True}
LAB = {"LabApp": {"custom_css": True}}


def custom_css(user_css: Path | None = None) -> str:
    """Our rules, then the user's own custom.css (theirs come last: they win a tie)."""
    text = CUSTOM_CSS
    if user_css is not None and user_css.is_file():
        text += "\n" + user_css.read_text(errors="replace")
    return text


def _handler():
    from jupyter_core.paths import jupyter_config_dir
    from jupyter_server.base.handlers import JupyterHandler
    from tornado import web

    class CustomCssHandler(JupyterHandler):
        @web.authenticated
        def get(self) -> None:
            self.set_header("Content-Type", "text/css")
            self.set_header("Cache-Control", "no-cache")
            self.write(custom_css(Path(jupyter_config_dir()) / "custom" / "custom.css"))

    return CustomCssHandler


def _jupyter_server_extension_points():
    return [{"module": "grader.servers.lab_style"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join

    webapp = serverapp.web_app
    route = url_path_join(webapp.settings.get("base_url", "/"), "custom/custom.css")
    webapp.add_handlers(".*$", [(route, _handler())])
