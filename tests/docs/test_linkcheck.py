"""docs/linkcheck.py: what it calls broken in a built site."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _linkcheck():
    spec = importlib.util.spec_from_file_location("linkcheck", os.path.join(ROOT, "docs", "linkcheck.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.unit
def test_missing_pages_and_anchors_are_broken_and_the_rest_is_not(tmp_path):
    (tmp_path / "api").mkdir()
    (tmp_path / "index.html").write_text(
        '<h1 id="top">x</h1><a href="api/a.html#ok">1</a><a href="api/a.html#gone">2</a>'
        '<a href="nowhere.html">3</a><a href="#top">4</a><a href="https://example.invalid/x">5</a>'
        '<img src="img/pic.svg"><a href="/api/a.html">6</a><a href="../up.html">7</a>')
    (tmp_path / "api" / "a.html").write_text('<h2 id="ok">a</h2><a href="../index.html#top">back</a>')
    lc = _linkcheck()
    assert lc.broken_links(str(tmp_path)) == [
        "index.html: api/a.html#gone (no id 'gone' in api/a.html)",
        "index.html: nowhere.html (no file nowhere.html)",
        "index.html: img/pic.svg (no file img/pic.svg)",
        "index.html: ../up.html (outside the site)",
    ]
    assert lc.main([str(tmp_path)]) == 1
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "pic.svg").write_text("<svg/>")
    assert len(lc.broken_links(str(tmp_path))) == 3
