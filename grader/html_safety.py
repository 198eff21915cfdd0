"""Student text on the grader's pages: every page built from a submission (the feedback pages,
the formgrader's submission view, the class report) renders student markdown and HTML through
one allow-list sanitizer, and is served with a Content-Security-Policy that allows no script
but the page's own.

The sanitizer is bleach (nbconvert's own: its `clean_html` filter and `SanitizeHTML` step use
it), with an allow-list wide enough for what a notebook's markdown renders to (headings, tables,
lists, code, images, links) and nothing that runs or loads: no script, event handler, frame,
object, form, base, meta, style element, `javascript:` or `data:` link. Math is turned into
MathML here, on the server (docutils' LaTeX converter), so that no page needs MathJax or any
other script to show it; TeX the converter does not know stays as its source text.

nbconvert renders a notebook through two filters this module replaces (nbgrader_config sets
them for every HTMLExporter: feedback and the formgrader alike): `markdown2html` (markdown
cells, text/markdown outputs, instructor comments) and `clean_html` (text/html outputs, raw
cells); with `sanitize_html` on, nbconvert's templates drop JavaScript and widget outputs and
show SVG only as an image.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from jinja2 import pass_context

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "outputs" / "templates"

# What a notebook's markdown renders to, plus the inline HTML students write in it.
TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd",
    "del", "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s",
    "samp", "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var",
})
# Attributes by tag ("*": any allowed tag). id and class are kept, then rewritten or checked
# below; href and src are checked by `_allowed_attribute`.
ATTRIBUTES = {
    "*": {"title", "class", "style", "lang", "dir"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan", "align"}, "th": {"colspan", "rowspan", "align", "scope"},
    "col": {"span"}, "colgroup": {"span"}, "ol": {"start", "type"}, "li": {"value"},
    "h1": {"id"}, "h2": {"id"}, "h3": {"id"}, "h4": {"id"}, "h5": {"id"}, "h6": {"id"},
}
# CSS that styles text in place: nothing that loads (url()), moves (position) or covers.
CSS_PROPERTIES = frozenset({
    "color", "background-color", "font-weight", "font-style", "font-variant", "font-size",
    "text-align", "text-decoration", "vertical-align", "white-space", "border", "border-color",
    "border-style", "border-width", "padding", "margin",
})
PROTOCOLS = frozenset({"http", "https", "mailto", "data"})  # data: images only (below)
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml);base64,[a-z0-9+/=]*\Z")
# Classes markdown rendering gives (pygments' short token names, nbconvert's anchor links):
# none of the page's own layout classes (a student's `navbar-fixed-top` would cover the page).
CLASS = re.compile(r"[a-z][a-z0-9]{0,2}|highlight|hll|anchor-link|language-[a-z0-9+#-]+")
# Ids and in-page links in student content are prefixed, so none can take the id of one of the
# page's own elements (the formgrader finds each score box by the grade id).
ID_PREFIX = "user-content-"

MATHML_TAGS = frozenset({
    "math", "mi", "mn", "mo", "ms", "mspace", "mtext", "mrow", "mfrac", "msqrt", "mroot",
    "msub", "msup", "msubsup", "munder", "mover", "munderover", "mtable", "mtr", "mtd",
    "mstyle", "mpadded", "mphantom", "menclose", "semantics", "annotation",
})
MATHML_ATTRIBUTES = {"*": {
    "mathvariant", "displaystyle", "scriptlevel", "stretchy", "movablelimits", "fence",
    "separator", "lspace", "rspace", "accent", "accentunder", "columnalign", "rowalign",
    "columnspacing", "rowspacing", "width", "height", "depth", "display", "notation",
    "linethickness", "form", "largeop", "symmetric", "minsize", "maxsize", "class"}}
# docutils' converter names a few common commands otherwise
TEX_SPELLINGS = [(re.compile(r"\\dots\b"), r"\\ldots"),
                 (re.compile(r"\\(big|Big|bigg|Bigg)([lr]?)\b"), ""),
                 (re.compile(r"\\frac(\d)(\d)"), r"\\frac{\1}{\2}")]


def _scheme(value: str) -> str | None:
    """The URL's scheme as a browser reads it (entities are already decoded by the parser):
    whitespace and control characters dropped, lowercase; None for a relative URL."""
    squeezed = re.sub(r"[\x00-\x20\x7f-\xa0\s`]+", "", value).lower()
    try:
        scheme = urlsplit(squeezed).scheme
    except ValueError:
        return "invalid"
    return scheme or None


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    if name not in ATTRIBUTES["*"] | ATTRIBUTES.get(tag, set()):
        return False
    if name == "class":
        return all(CLASS.fullmatch(c) for c in value.split())
    if name == "href":
        return _scheme(value) in (None, "http", "https", "mailto")
    if name == "src":  # an image: relative to the page, or its bytes (never http: a tracker)
        scheme = _scheme(value)
        return scheme is None or (scheme == "data" and bool(
            IMAGE_DATA.match(re.sub(r"\s+", "", value).lower())))
    return True


@functools.cache
def _cleaners():
    """(student HTML's cleaner, MathML's cleaner); made on first use, so that reading the
    nbgrader configuration (grader.course) never imports bleach."""
    import bleach
    from bleach.css_sanitizer import CSSSanitizer
    from bleach.html5lib_shim import Filter

    class PrefixIds(Filter):
        """Ids and #fragment links get ID_PREFIX (run by bleach after sanitizing)."""

        def __iter__(self):
            for token in super().__iter__():
                if token["type"] in ("StartTag", "EmptyTag") and token.get("data"):
                    data = dict(token["data"])
                    for key, value in data.items():
                        if key == (None, "id") and not value.startswith(ID_PREFIX):
                            data[key] = ID_PREFIX + value
                        elif key == (None, "href") and value.startswith("#") and \
                                not value.startswith("#" + ID_PREFIX):
                            data[key] = "#" + ID_PREFIX + value[1:]
                    token["data"] = data
                yield token

    html = bleach.Cleaner(
        tags=TAGS, attributes=_allowed_attribute, protocols=PROTOCOLS, strip=True,
        strip_comments=True, css_sanitizer=CSSSanitizer(allowed_css_properties=CSS_PROPERTIES),
        filters=[PrefixIds])
    mathml = bleach.Cleaner(tags=MATHML_TAGS, attributes=MATHML_ATTRIBUTES, protocols=(),
                            strip=True, strip_comments=True)
    return html, mathml


def clean_html(html) -> str:
    """Student HTML with everything off the allow-list removed (the tags, keeping their text).
    nbconvert's `clean_html` filter, for text/html outputs and raw cells."""
    html = html.decode("utf-8", "replace") if isinstance(html, bytes) else str(html)
    return _cleaners()[0].clean(html)


def tex_to_mathml(tex: str, block: bool) -> str | None:
    """MathML for one formula, or None where docutils' converter cannot read it."""
    from docutils.utils.math import latex2mathml

    for pattern, spelling in TEX_SPELLINGS:
        tex = pattern.sub(spelling, tex)
    try:
        mathml = latex2mathml.tex2mathml(tex, as_block=block)
    except Exception as e:  # noqa: BLE001 - its parser raises several kinds on odd TeX
        log.debug("math left as TeX (%s): %s", e, tex[:80])
        return None
    return _cleaners()[1].clean(mathml)


def _math_renderer():
    """nbconvert's markdown renderer, with each formula replaced by a placeholder that the
    sanitizer leaves alone (a random token) and put back as MathML once the HTML is clean."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class MathMLRenderer(IPythonRenderer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.token = "mathml" + secrets.token_hex(8)
            self.formulas: list[str] = []

        def _formula(self, tex: str, text: str, block: bool) -> str:
            mathml = tex_to_mathml(tex, block)
            if mathml is None:
                return self.escape_html(text)
            self.formulas.append(mathml)
            return f"{self.token}x{len(self.formulas) - 1}x"

        def inline_math(self, body: str) -> str:
            return self._formula(body, f"${body}$", block=False)

        def block_math(self, body: str) -> str:
            return self._formula(body, f"$${body}$$", block=True)

        def latex_environment(self, name: str, body: str) -> str:
            text = f"\\begin{{{name}}}{body}\\end{{{name}}}"
            return self._formula(text, text, block=True)

        def put_back(self, html: str) -> str:
            return re.sub(f"{self.token}x(\\d+)x", lambda m: self.formulas[int(m[1])], html)

    return MathMLRenderer


def markdown_to_html(source: str, attachments: dict | None = None, path: str = "") -> str:
    """Student markdown as clean HTML: rendered as nbconvert renders it (attachments become
    data: images), sanitized, math as MathML."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    renderer = _math_renderer()(escape=False, attachments=attachments or {}, path=path,
                                embed_images=False, anchor_link_text="¶",
                                exclude_anchor_links=False)
    html = MarkdownWithMath(renderer=renderer).render(str(source))
    return renderer.put_back(clean_html(html))


@pass_context
def markdown2html(context, source) -> str:
    """nbconvert's `markdown2html` filter, sanitized (set for HTMLExporter by nbgrader_config):
    markdown cells, text/markdown outputs and the instructor's comments."""
    cell = context.get("cell") or {}
    path = (context.get("resources") or {}).get("metadata", {}).get("path", "")
    return markdown_to_html(source, cell.get("attachments") or {}, path)


# ----- Content-Security-Policy ----------------------------------------------------------------

def csp(script_src: str = "'none'", connect_src: str = "'none'", img_src: str = "data:",
        form_action: str = "'none'", style_src: str = "'unsafe-inline'",
        font_src: str = "data:") -> str:
    """A policy that loads nothing but the page's styles and images and runs no script but
    what `script_src` names: no inline script, event handler or javascript: URL unless hashed
    there, no frame, object, plugin, <base> or form target elsewhere."""
    return "; ".join([
        "default-src 'none'", f"script-src {script_src}", f"style-src {style_src}",
        f"img-src {img_src}", f"font-src {font_src}", f"connect-src {connect_src}",
        "frame-src 'none'", "object-src 'none'", "media-src 'none'", "worker-src 'none'",
        "base-uri 'none'", f"form-action {form_action}", "manifest-src 'none'"])


# Static pages (feedback, the class report): nothing runs at all.
STATIC_PAGE_POLICY = csp()


def meta_policy(policy: str = STATIC_PAGE_POLICY) -> str:
    """The <meta> that carries `policy` in a static page: the first element of its <head>, so
    that it governs everything after it. (frame-ancestors and sandbox have no effect there.)"""
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


def script_hash(script: str) -> str:
    """A CSP source that lets exactly this inline script run."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def with_page_policy(head) -> str:
    """A template's <head> (its own markup, no student text) as a static page's: the policy
    first, and none of the template's scripts (MathJax: math is MathML already). The feedback
    template's filter."""
    from bs4 import BeautifulSoup

    text = str(head)
    start = text.lower().index("<head")  # what comes before (doctype, <html>) stays as it is
    soup = BeautifulSoup(text[start:], "html.parser")
    for script in soup.find_all("script"):
        script.decompose()
    soup.head.insert(0, BeautifulSoup(meta_policy(), "html.parser").meta)
    return text[:start] + str(soup.head)


# ----- the nbgrader configuration --------------------------------------------------------------

def nbgrader_templates() -> Path:
    """nbgrader's formgrader templates (the feedback and submission views ours extend)."""
    import nbgrader

    return Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"


def exporter_config():
    """The HTMLExporter settings of every page nbgrader builds from a submission: the
    formgrader's submission view (its exporter reads the top-level HTMLExporter section, with
    nbgrader's template name forced: so the template file names ours) and the feedback pages
    (GenerateFeedback's exporter, whose own section comes last)."""
    from traitlets.config import Config

    nbgrader = nbgrader_templates()
    bootstrap = nbgrader.parent / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    c = Config()
    c.HTMLExporter.sanitize_html = True  # no JavaScript or widget output; SVG as an image
    c.HTMLExporter.filters = {name: f"grader.html_safety.{name}" for name in
                              ("markdown2html", "clean_html", "with_page_policy")}
    c.HTMLExporter.extra_template_paths = [str(TEMPLATES), str(nbgrader)]
    c.HTMLExporter.template_file = "grader_formgrade.html.j2"
    c.GenerateFeedback.HTMLExporter.template_file = "grader_feedback.html.j2"
    c.GenerateFeedback.HTMLExporter.extra_template_paths = [str(TEMPLATES), str(nbgrader),
                                                            str(bootstrap)]
    return c


def has_page_policy(page: bytes) -> bool:
    """Whether a generated page's <head> begins with the static pages' policy (a page made
    without our templates, by another configuration, would not)."""
    from bs4 import BeautifulSoup

    end = page.find(b"</head>")
    soup = BeautifulSoup(page[:end if end >= 0 else len(page)], "html.parser")
    first = soup.head.find(True) if soup.head else None
    return first is not None and first.name == "meta" and \
        first.get("http-equiv", "").lower() == "content-security-policy" and \
        first.get("content") == STATIC_PAGE_POLICY
