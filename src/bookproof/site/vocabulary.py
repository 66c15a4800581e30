"""Reading a chapter's Vocabulary section into terms, for the site's glossary.

Every chapter ends with a section headed ``Vocabulary`` holding one bullet
list, one term per item::

    ## Vocabulary

    - **Dispatcher**: the only code that turns a request into a handler call.
    - **Registry / allowlist**: every tool the dispatcher knows / the names it
      will run.

The term is the bold text that opens the item; the definition is everything
after the colon (which may also sit just inside the bold: ``**Term:** ...``),
Markdown kept as written, its lines joined. The section is read with a real
CommonMark parser, so a wrapped item, a code span or a link in a definition
reads as a Markdown reader sees it. Anything else is refused with the file
and line: a chapter without the section, a second one, a numbered list, a
paragraph or code block in it, an item without a bold term, colon or
definition, a nested list, the same term twice. A glossary that silently
drops a term would be worse than a build that stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["HEADING", "Term", "VocabularyError", "parse_vocabulary", "read_vocabulary"]

HEADING = "Vocabulary"

_FORMAT_HINT = "each item is `- **term**: definition`"


class VocabularyError(Exception):
    """A chapter's Vocabulary section cannot be read; the message names file and line."""


@dataclass(frozen=True)
class Term:
    """One vocabulary entry, as Markdown inline source."""

    term: str
    definition: str
    line: int  # 1-based line of the item in the chapter

    @property
    def key(self) -> str:
        """The term compared without case or spacing differences."""
        return " ".join(self.term.casefold().split())


def read_vocabulary(path: Path) -> tuple[Term, ...]:
    """The terms of the chapter at `path` (UTF-8 Markdown)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise VocabularyError(f"{path}: cannot read the chapter: {error}") from None
    return parse_vocabulary(str(path), text)


def parse_vocabulary(where: str, text: str) -> tuple[Term, ...]:
    """The terms of the Vocabulary section of `text`; `where` names the file in errors."""
    tokens = MarkdownIt("commonmark").parse(text)
    start, level, heading_line = _section_start(where, tokens)
    terms: list[Term] = []
    lists = 0
    index = start
    while index < len(tokens):
        token = tokens[index]
        if token.type == "heading_open" and int(token.tag[1:]) <= level:
            break
        line = _line(token)
        if token.type == "bullet_list_open":
            lists += 1
            if lists > 1:
                raise VocabularyError(
                    f"{where}:{line}: a second list in the {HEADING} section; "
                    f"keep every term in one bullet list ({_FORMAT_HINT})"
                )
            index, items = _read_list(where, tokens, index)
            terms.extend(items)
            continue
        if token.nesting >= 0 and token.level == 0:
            raise VocabularyError(
                f"{where}:{line}: only a bullet list belongs in the {HEADING} section, "
                f"found {_describe(token)} ({_FORMAT_HINT})"
            )
        index += 1
    if not terms:
        raise VocabularyError(
            f"{where}:{heading_line}: the {HEADING} section defines no term ({_FORMAT_HINT})"
        )
    seen: dict[str, Term] = {}
    for term in terms:
        if term.key in seen:
            raise VocabularyError(
                f"{where}:{term.line}: {term.term!r} is defined twice in the {HEADING} "
                f"section (first at line {seen[term.key].line})"
            )
        seen[term.key] = term
    return tuple(terms)


def _line(token: Token) -> int:
    return token.map[0] + 1 if token.map else 0


def _describe(token: Token) -> str:
    names = {
        "paragraph_open": "a paragraph",
        "ordered_list_open": "a numbered list",
        "bullet_list_open": "a nested list",
        "fence": "a code block",
        "code_block": "an indented code block",
        "blockquote_open": "a quote",
        "html_block": "an HTML block",
        "hr": "a thematic break",
        "table_open": "a table",
    }
    return names.get(token.type, f"a {token.type.removesuffix('_open')} block")


def _section_start(where: str, tokens: list[Token]) -> tuple[int, int, int]:
    """The index of the first token after the Vocabulary heading, its level and line."""
    found: list[tuple[int, int, int]] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        title = tokens[index + 1].content.strip()
        if title.casefold() == HEADING.casefold():
            found.append((index + 3, int(token.tag[1:]), _line(token)))
    if not found:
        raise VocabularyError(
            f"{where}: no `## {HEADING}` section; every chapter ends with one ({_FORMAT_HINT})"
        )
    if len(found) > 1:
        lines = ", ".join(str(line) for _, _, line in found)
        raise VocabularyError(
            f"{where}:{found[1][2]}: {len(found)} {HEADING} sections (lines {lines})"
        )
    return found[0]


def _read_list(where: str, tokens: list[Token], index: int) -> tuple[int, list[Term]]:
    """Read the bullet list opening at `index`; return the index after it and its terms."""
    opening = tokens[index]
    terms: list[Term] = []
    index += 1
    while tokens[index].type != "bullet_list_close" or tokens[index].level != opening.level:
        item = tokens[index]
        if item.type != "list_item_open":  # pragma: no cover - CommonMark guarantees items
            raise VocabularyError(f"{where}:{_line(item)}: unexpected {item.type} in the list")
        close = index + 1
        while not (tokens[close].type == "list_item_close" and tokens[close].level == item.level):
            close += 1
        terms.append(_read_item(where, item, tokens[index + 1 : close]))
        index = close + 1
    return index + 1, terms


def _read_item(where: str, item: Token, body: list[Token]) -> Term:
    line = _line(item)
    blocks = [token for token in body if token.level == item.level + 1 and token.nesting >= 0]
    if not blocks or blocks[0].type != "paragraph_open":
        found = _describe(blocks[0]) if blocks else "nothing"
        raise VocabularyError(
            f"{where}:{line}: a vocabulary item holds one paragraph, found {found} ({_FORMAT_HINT})"
        )
    if len(blocks) > 1:
        raise VocabularyError(
            f"{where}:{_line(blocks[1])}: a vocabulary item holds one paragraph, found "
            f"{_describe(blocks[1]).replace('a paragraph', 'a second paragraph')} in it "
            f"({_FORMAT_HINT})"
        )
    inline = body[body.index(blocks[0]) + 1]
    children = [child for child in inline.children or [] if child.content or child.nesting]
    if not children or children[0].type != "strong_open":
        raise VocabularyError(
            f"{where}:{line}: the item does not start with a bold term ({_FORMAT_HINT}): "
            f"{_preview(inline.content)}"
        )
    markup = children[0].markup
    source = inline.content.strip()
    term, definition = _split_item(source, markup)
    if term is None or definition is None:
        raise VocabularyError(
            f"{where}:{line}: no colon after the bold term ({_FORMAT_HINT}): {_preview(source)}"
        )
    if not term:
        raise VocabularyError(f"{where}:{line}: the bold term is empty ({_FORMAT_HINT})")
    if markup in term:
        raise VocabularyError(
            f"{where}:{line}: the term must be one bold span before the colon "
            f"({_FORMAT_HINT}): {_preview(source)}"
        )
    if not definition:
        raise VocabularyError(
            f"{where}:{line}: {term!r} has no definition after its colon ({_FORMAT_HINT})"
        )
    return Term(term=term, definition=definition, line=line)


def _split_item(source: str, markup: str) -> tuple[str | None, str | None]:
    """`**term**: definition` or `**term:** definition` into its two halves, else Nones."""
    body = source[len(markup) :]
    after = body.find(markup + ":")
    inside = body.find(":" + markup)
    if after >= 0 and (inside < 0 or after < inside):
        term, rest = body[:after], body[after + len(markup) + 1 :]
    elif inside >= 0:
        term, rest = body[:inside], body[inside + len(markup) + 1 :]
    else:
        return None, None
    return " ".join(term.split()), " ".join(rest.split())


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 60 else flat[:57] + "...")
