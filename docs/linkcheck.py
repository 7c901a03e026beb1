"""Check the internal links of a built site: every relative href and src
of every HTML page names a file of the site, and every #fragment an id (or
name) in the page it points to.  External links (a scheme or //host) are
not fetched: the check runs offline.

    python docs/linkcheck.py SITE_DIR
"""

from __future__ import annotations

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append(value)


def parse_site(root: str) -> dict[str, _Page]:
    """{path relative to root: parsed page} of every .html file."""
    pages = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                page = _Page()
                with open(path, encoding="utf-8") as f:
                    page.feed(f.read())
                pages[os.path.relpath(path, root)] = page
    return pages


def broken_links(root: str) -> list[str]:
    """'page: link (why)' for each internal link that leads nowhere."""
    pages = parse_site(root)
    out = []
    for rel, page in sorted(pages.items()):
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            if parts.path.startswith("/"):  # (404.html's links: from the site's root)
                target = os.path.normpath(unquote(parts.path).lstrip("/"))
            elif parts.path:
                target = os.path.normpath(os.path.join(os.path.dirname(rel), unquote(parts.path)))
                if os.path.isdir(os.path.join(root, target)):
                    target = os.path.join(target, "index.html")
            else:
                target = rel
            if target.startswith(".."):
                out.append(f"{rel}: {link} (outside the site)")
            elif not os.path.isfile(os.path.join(root, target)):
                out.append(f"{rel}: {link} (no file {target})")
            elif parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                out.append(f"{rel}: {link} (no id {parts.fragment!r} in {target})")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.stderr.write("usage: python docs/linkcheck.py SITE_DIR\n")
        return 2
    pages = parse_site(args[0])
    bad = broken_links(args[0])
    for line in bad:
        print("broken link:", line)
    links = sum(len(p.links) for p in pages.values())
    print(f"linkcheck: {len(pages)} pages, {links} links, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
