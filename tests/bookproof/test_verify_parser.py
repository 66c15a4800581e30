"""The chapter parser on arbitrary Markdown, and the update that rewrites its fences."""

from __future__ import annotations

import string
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bookproof.verify.chapter import classify_info, parse_chapter, split_lines
from bookproof.verify.compare import normalise
from bookproof.verify.update import rewrite_fences

PATH = Path("chapter.md")


def test_info_strings_are_read_exactly_as_the_format_table_says() -> None:
    assert classify_info("python") == ("python", None)
    assert classify_info("python skip") == ("skip", None)
    assert classify_info("python raises=KeyError") == ("raises", "KeyError")
    assert classify_info("output") == ("output", None)
    assert classify_info("checkpoint-output") == ("checkpoint-output", None)
    for shown in ("bash", "toml", "text", "", "py", "python3", "pycon", "python raises="):
        assert classify_info(shown) == ("shown", None)


def test_an_output_block_pairs_only_across_blank_lines() -> None:
    chapter = parse_chapter(
        PATH,
        "```python\nprint(1)\n```\n\n\n```output\n1\n```\n\n"
        "```python\nprint(2)\n```\ntext\n\n```output\n2\n```\n",
    )
    pairs = [(x.fence.line, x.output.line if x.output else None) for x in chapter.listings]
    assert pairs == [
        (1, 6),
        (10, None),
    ]
    assert chapter.problems == (
        "chapter.md:15: `output` block with no `python` block just before it "
        "(only blank lines may separate them)",
    )


def test_an_output_after_a_skipped_listing_or_another_output_is_an_orphan() -> None:
    chapter = parse_chapter(
        PATH,
        "```python skip\nx\n```\n\n```output\n1\n```\n\n"
        "```python\nprint(1)\n```\n\n```output\n1\n```\n\n```output\n1\n```\n",
    )
    assert [problem.split(":")[1] for problem in chapter.problems] == ["5", "17"]


def test_fences_inside_quotes_and_lists_are_found_with_their_lines() -> None:
    chapter = parse_chapter(
        PATH,
        "> ```python\n> print(1)\n> ```\n>\n> ```output\n> 1\n> ```\n\n"
        "- ```python skip\n  y\n  ```\n",
    )
    (listing,) = chapter.listings
    assert (listing.fence.line, listing.fence.content, listing.output.line) == (1, "print(1)\n", 5)
    assert [fence.line for fence in chapter.skipped] == [9]


# Arbitrary text, biased toward the characters fences are made of.
markdown = st.lists(
    st.sampled_from(
        [*"`~>- \n\tpythonoutskiprase=KyErr.", "```", "```python\n", "```output\n", "\n\n"]
    ),
    max_size=150,
).map("".join)


@given(markdown)
def test_parsing_arbitrary_markdown_never_crashes_and_lines_stay_in_range(text: str) -> None:
    chapter = parse_chapter(PATH, text)
    count = len(split_lines(text))
    for fence in chapter.fences:
        assert 1 <= fence.line <= count
        assert fence.line < fence.end_line <= count + 1
    listed = [listing.fence for listing in chapter.listings]
    assert listed == [f for f in chapter.fences if f.kind in ("python", "raises")]
    for listing in chapter.listings:
        if listing.output is not None:
            assert listing.output.line > listing.fence.line


@given(st.text(max_size=300))
def test_parsing_any_unicode_never_crashes(text: str) -> None:
    parse_chapter(PATH, text)


line_text = st.text(string.ascii_letters + string.digits + " .,:=()'\"", max_size=20).map(
    lambda s: s.rstrip()
)
content = st.lists(line_text, max_size=4)
kinds = st.sampled_from(["python", "python skip", "python raises=KeyError", "bash", "text"])


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[tuple[str, list[str], list[str] | None]]]:
    """A chapter built from known blocks: (info, content lines, paired output lines)."""
    blocks = []
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        info = draw(kinds)
        body = draw(content)
        output = (
            draw(st.none() | content) if info.startswith("python") and "skip" not in info else None
        )
        blocks.append((info, body, output))
        parts.append(draw(st.sampled_from(["", "Some prose.\n\n", "# Heading\n\n"])))
        parts.append("```" + info + "\n" + "".join(f"{line}\n" for line in body) + "```\n")
        if output is not None:
            parts.append(draw(st.sampled_from(["\n", "\n\n\n"])))
            parts.append("```output\n" + "".join(f"{line}\n" for line in output) + "```\n")
        parts.append("\n")
    return "".join(parts), blocks


@given(documents())
def test_a_chapter_built_from_known_blocks_parses_back_to_them(
    case: tuple[str, list[tuple[str, list[str], list[str] | None]]],
) -> None:
    text, blocks = case
    chapter = parse_chapter(PATH, text)
    assert chapter.problems == ()
    shown = [f for f in chapter.fences if f.kind != "output"]
    assert [(f.info, f.content) for f in shown] == [
        (info, "".join(f"{line}\n" for line in body)) for info, body, _ in blocks
    ]
    executed = [
        output for info, _, output in blocks if info in ("python", "python raises=KeyError")
    ]
    assert [
        None if listing.output is None else listing.output.content.splitlines()
        for listing in chapter.listings
    ] == executed


@given(documents(), st.lists(content, min_size=6, max_size=6))
def test_rewriting_output_blocks_changes_only_their_content(
    case: tuple[str, list[tuple[str, list[str], list[str] | None]]],
    new_outputs: list[list[str]],
) -> None:
    text, _ = case
    chapter = parse_chapter(PATH, text)
    outputs = [x.output for x in chapter.listings if x.output is not None]
    replacements = {fence: "\n".join(new) for fence, new in zip(outputs, new_outputs, strict=False)}
    rewritten = parse_chapter(PATH, rewrite_fences(text, replacements))
    assert [f.info for f in rewritten.fences] == [f.info for f in chapter.fences]
    for before, after in zip(chapter.fences, rewritten.fences, strict=True):
        if before in replacements:
            assert normalise(after.content) == normalise(replacements[before])
        else:
            assert after.content == before.content


@given(documents())
def test_rewriting_outputs_with_their_own_normalised_content_changes_no_byte(
    case: tuple[str, list[tuple[str, list[str], list[str] | None]]],
) -> None:
    text, _ = case
    chapter = parse_chapter(PATH, text)
    # Only blocks already in normal form can be rewritten without a byte changing
    # (--update never rewrites a block that matches, so others are never touched).
    replacements = {
        listing.output: listing.output.content
        for listing in chapter.listings
        if listing.output is not None
        and listing.output.content
        == "".join(f"{line}\n" for line in normalise(listing.output.content))
    }
    assert rewrite_fences(text, replacements) == text
