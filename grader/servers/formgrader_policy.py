"""A Jupyter server extension: the Content-Security-Policy of the formgrader's submission pages.

nbgrader's formgrader shows a student's notebook inside the instructor's Jupyter server, whose
origin can call the server's API as the instructor. Its page is rendered sanitized
(grader/html_safety.py, set through nbgrader_config); this policy is the second wall: on the
submission view no script runs but nbgrader's own files under formgrader/static/ and the one
inline script of our template (grader/outputs/templates/grader_formgrade.html.j2, by its hash); a
file
of the submission that the formgrader serves (images beside the notebook, anything else the
student put there) is served sandboxed: an HTML or SVG file opened from there runs nothing.

Only those pages get it: JupyterLab itself and nbgrader's other pages keep the server's own
headers (they run inline script of their own and show no student text but ids and scores).
`grader lab` and the hub's instructor server enable this extension
(ServerApp.jpserver_extensions).
"""

from __future__ import annotations

import functools
import re

from tornado.web import OutputTransform

from grader.html_safety import TEMPLATES, csp, script_hash

NAVIGATION = r"(next_incorrect|prev_incorrect|next|prev)/?"
# Our template of the submission view (html_safety.exporter_config names it).
TEMPLATE = TEMPLATES / "grader_formgrade.html.j2"


@functools.cache
def inline_script_hashes() -> tuple[str, ...]:
    """The CSP hashes of the template's inline scripts (those with no src or type)."""
    text = TEMPLATE.read_text()
    return tuple(script_hash(body) for body in re.findall(r"<script>(.*?)</script>", text,
                                                          flags=re.S))


def submission_page_policy(origin: str, base_url: str) -> str:
    """The policy of a submission view at origin + base_url: nbgrader's scripts (by path) and
    our inline one (by hash); its API (connect-src); nbgrader's style sheets and fonts; images
    beside the notebook or inline."""
    static = f"{origin}{base_url}formgrader/static/"
    return csp(script_src=" ".join([static, *inline_script_hashes()]),
               connect_src="'self'", img_src="'self' data:", form_action="'self'",
               style_src="'self' 'unsafe-inline'", font_src="'self' data:") + \
        "; frame-ancestors 'self'"


# A file the formgrader serves from the submission's folder: shown, never run.
SUBMISSION_FILE_POLICY = csp(img_src="'self' data:") + "; frame-ancestors 'self'; sandbox"


class FormgraderPolicy(OutputTransform):
    """Sets the policy on the formgrader's submission views and submission files."""

    def __init__(self, request, base_url: str = "/"):
        super().__init__(request)
        self.request = request
        prefix = re.escape(base_url.rstrip("/") + "/formgrader/submissions/")
        self.page = re.compile(prefix + r"[^/]+/?")
        self.navigation = re.compile(prefix + r"[^/]+/" + NAVIGATION)
        self.file = re.compile(prefix + r"[^/]+/.+")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"

    def policy(self) -> str | None:
        path = self.request.path
        if self.page.fullmatch(path):
            origin = f"{self.request.protocol}://{self.request.host}"
            return submission_page_policy(origin, self.base_url)
        if self.navigation.fullmatch(path):
            return None  # a redirect to the next submission
        if self.file.fullmatch(path):
            return SUBMISSION_FILE_POLICY
        return None

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        policy = self.policy()
        if policy is not None:
            headers["Content-Security-Policy"] = policy
            headers["X-Content-Type-Options"] = "nosniff"
        return status_code, headers, chunk


def _jupyter_server_extension_points():
    return [{"module": "grader.servers.formgrader_policy"}]


def _load_jupyter_server_extension(serverapp) -> None:
    webapp = serverapp.web_app
    webapp.add_transform(functools.partial(FormgraderPolicy,
                                           base_url=webapp.settings.get("base_url", "/")))
    serverapp.log.info("grader: Content-Security-Policy on the formgrader's submission pages")
