"""toolkit.explorer: attention weights as one self-contained HTML fragment (no kernel, no
browser here; tests/site/test_explorer_page.py drives the fragment in chromium)."""

import json
import re

import numpy as np
import pytest
import torch

from lectures.toolkit.explorer import MEAN_NAME, attention_explorer

HOSTILE = "</script><img src=x onerror=alert(1)>"


def softmax_weights(n_head, n_query, n_key, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(n_head, n_query, n_key, generator=g) * 2, dim=-1)


def data_of(html: str) -> dict:
    blocks = re.findall(r'<script type="application/json" class="ax-data">(.*?)</script>', html,
                        flags=re.S)
    assert len(blocks) == 1, html[:500]
    return json.loads(blocks[0])


def test_data_round_trips_and_weights_are_rounded_to_three_decimals():
    w = softmax_weights(3, 4, 5)
    x = attention_explorer(list("abcd"), list("vwxyz"), w, title="t", head_names=["a", "b", "c"])
    data = data_of(x.html)
    assert data["q"] == list("abcd") and data["k"] == list("vwxyz")
    assert data["h"] == ["a", "b", "c", MEAN_NAME] and data["mean"] is True
    sent = np.array(data["w"])  # thousandths
    assert sent.shape == (4, 4, 5) and sent.dtype.kind == "i"
    expected = np.round(w.double().numpy(), 3)
    np.testing.assert_allclose(sent[:3] / 1000, expected, atol=1e-12)
    np.testing.assert_allclose(sent[3] / 1000, np.round(w.double().mean(0).numpy(), 3),
                               atol=1e-12)


def test_one_head_has_no_mean_row_and_default_names():
    x = attention_explorer(["a"], ["a", "b"], np.array([[[0.25, 0.75]]]), title="one")
    data = data_of(x.html)
    assert data["h"] == ["head 0"] and data["mean"] is False and data["w"] == [[[250, 750]]]


def test_hostile_tokens_appear_only_escaped():
    tokens = [HOSTILE, "a`b${x}", "'\"", "x\u2028y\u2029z", " \n\t", "&amp;", "<!--", ""]
    n = len(tokens)
    x = attention_explorer(tokens, tokens, softmax_weights(2, n, n), title="<b>bold</b> & co",
                           head_names=["<i>h</i>", "h'1"])
    html = x.html
    assert html.isascii()
    for raw in ["<img", "<b>", "<i>", "<!--", "\u2028", "\u2029"]:
        assert raw not in html, f"{raw!r} is in the HTML unescaped"
    # the hostile token is there twice (query and key), each time only in its escaped form
    escaped = HOSTILE.replace("<", "\\u003c").replace(">", "\\u003e")
    assert html.count(escaped) == 2 and html.count("onerror") == 2
    # the only script end tags are the fragment's own two, and it has exactly two scripts
    assert html.count("</script>") == 2 and html.count("<script") == 2
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in html  # the title, autoescaped
    data = data_of(html)
    assert data["q"] == tokens and data["k"] == tokens  # JSON.parse gets the exact text back
    assert data["h"][:2] == ["<i>h</i>", "h'1"]
    payload = re.search(r'class="ax-data">(.*?)</script>', html, flags=re.S).group(1)
    assert not set("<>&'") & set(payload)
    assert "\\u003c/script\\u003e\\u003cimg" in payload


def test_non_ascii_title_and_tokens_stay_ascii_on_the_page():
    x = attention_explorer(["Größe"], ["ü", "ß"], np.array([[[0.5, 0.5]]]), title="Übersetzung")
    assert x.html.isascii()
    assert "&#220;bersetzung" in x.html
    assert data_of(x.html)["q"] == ["Größe"]


def test_two_explorers_have_different_ids():
    w = softmax_weights(1, 2, 2)
    a = attention_explorer(["a", "b"], ["a", "b"], w, title="same")
    b = attention_explorer(["a", "b"], ["a", "b"], w, title="same")
    ids = [re.search(r'<div class="attn-x" id="([^"]+)"', x.html).group(1) for x in (a, b)]
    assert ids[0] != ids[1] and ids == [a.uid, b.uid]
    for x in (a, b):
        assert x.html.count(x.uid) == 3  # id, data-attn-x, and the script's own lookup


def test_repr_is_html_and_plain_text():
    x = attention_explorer(["a", "b"], ["c"], np.ones((2, 2, 1)), title="cross")
    assert x._repr_html_() == x.html
    assert repr(x) == ("AttentionExplorer('cross': 2 heads x 2 queries x 1 keys; "
                       "interactive in HTML)")


def test_the_fragment_loads_nothing():
    x = attention_explorer(["a"], ["a"], np.ones((1, 1, 1)), title="t")
    for needle in ["src=", "href=", "http:", "https:", "@import", "url(", "fetch(",
                   "XMLHttpRequest", "innerHTML", "eval(", "document.write"]:
        assert needle not in x.html, needle
    assert len(x.html) < 10_000


@pytest.mark.parametrize("weights, match", [
    (np.full((2, 3), 1 / 3), r"\(n_head, n_query, n_key\), got shape \(2, 3\).*weights\[None\]"),
    (np.full((1, 2, 3, 1), 1 / 3), r"got shape \(1, 2, 3, 1\)"),
    (np.full((1, 3, 3), 1 / 3), r"3 query rows .* query_tokens has 2 tokens"),
    (np.full((1, 2, 4), 1 / 4), r"4 key columns .* key_tokens has 3 tokens"),
    (np.zeros((0, 2, 3)), r"empty axis"),
    (np.array([[[0.5, np.nan, 0.5], [1 / 3] * 3]]), r"finite: weights\[0, 0, 1\] = nan"),
    (np.array([[[1.2, -0.2, 0.0], [1 / 3] * 3]]), r"\[0, 1\]: weights\[0, 0, 0\] = 1\.2"),
    (np.array([[[0.2, 0.2, 0.2], [1 / 3] * 3]]), r"weights\[0, 0, :\] sums to 0\.6"),
])
def test_bad_weights_are_named(weights, match):
    with pytest.raises(ValueError, match=match):
        attention_explorer(["q0", "q1"], ["k0", "k1", "k2"], weights, title="t")


def test_bad_arguments_are_named():
    w = np.full((2, 1, 2), 0.5)
    with pytest.raises(ValueError, match=r"head_names has 1 names but weights has 2 heads"):
        attention_explorer(["a"], ["a", "b"], w, title="t", head_names=["only"])
    with pytest.raises(ValueError, match="title"):
        attention_explorer(["a"], ["a", "b"], w, title="  ")
    with pytest.raises(TypeError, match=r"query_tokens\[0\] is int"):
        attention_explorer([3], ["a", "b"], w, title="t")
    with pytest.raises(TypeError, match="key_tokens must be a list of strings, not str"):
        attention_explorer(["a"], "ab", w, title="t")
    with pytest.raises(ValueError, match="more than"):
        attention_explorer(["a"] * 501, ["a"] * 501, np.full((1, 501, 501), 1 / 501), title="t")


def test_torch_tensor_with_grad_and_float16_rows_are_accepted():
    w = softmax_weights(2, 3, 3).half().requires_grad_()
    x = attention_explorer(list("abc"), list("abc"), w, title="t")
    assert np.array(data_of(x.html)["w"]).shape == (3, 3, 3)
