"""Raw HTML in the book's Markdown: a small fixed set passes, anything else stops the build.

Markdown lets a page carry HTML, which the site would publish as it stands:
a chapter with `<img src=x onerror=...>` in its prose would run script in
every reader's browser. The chapters need only one piece of HTML, the
collapsed answers of their recall questions:

    <details>
    <summary>Answers</summary>
    ...
    </details>

So the tags `<details>` and `<summary>`, opening and closing, without
attributes, pass (a summary's text may sit between its tags, without markup).
Any other raw HTML, in a chapter, an exercise book or a generated page, fails
the build with its file and line, rather than being escaped: an author who
wrote HTML meant it, and shown as text it would be a silent defect.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.errors import ExtensionError

__all__ = ["ALLOWED_HTML", "html_problem", "refuse_raw_html"]

# Each line of a piece of raw HTML must be one of these.
ALLOWED_HTML = re.compile(r"</?details>|</?summary>|<summary>[^<>]*</summary>")
_SHOWN_CHARS = 80


def html_problem(html: str) -> str | None:
    """None when `html` is only allowed tags; otherwise its first line that is not."""
    for line in html.splitlines():
        stripped = line.strip()
        if stripped and not ALLOWED_HTML.fullmatch(stripped):
            return stripped
    return None


def _located(node: nodes.Node) -> tuple[str, int | None]:
    """The file and line of `node`, or of the nearest enclosing element that knows them
    (MyST gives inline HTML no line of its own)."""
    current: nodes.Node | None = node
    while current is not None:
        if current.line is not None:
            return current.source or "", current.line
        current = current.parent
    return node.source or "", None


def refuse_raw_html(doctree: nodes.document) -> None:
    """Raise naming every piece of raw HTML in the page beyond the allowed tags."""
    problems = []
    for raw in doctree.findall(nodes.raw):
        if "html" not in raw.get("format", "").split():
            continue
        found = html_problem(raw.astext())
        if found is None:
            continue
        source, line = _located(raw)
        source = source or doctree.get("source", "")
        shown = found if len(found) <= _SHOWN_CHARS else found[: _SHOWN_CHARS - 3] + "..."
        where = f"{source}:{line}" if line is not None else source
        problems.append(f"{where}: raw HTML is not allowed here: {shown!r}")
    if problems:
        raise ExtensionError(
            "only <details> and <summary>, without attributes, may be written as HTML in the "
            "book's Markdown (see book/FORMAT.md); found:\n" + "\n".join(problems)
        )
