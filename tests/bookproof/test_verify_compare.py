"""The output comparison: exact after normalising, loosened only by `...` wildcards."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from bookproof.verify.compare import matches, normalise, unified_diff


def test_trailing_spaces_and_trailing_blank_lines_are_ignored() -> None:
    assert matches("a\nb\n\n\n", "a   \nb\t\n")
    assert matches("a\r\nb\r\n", "a\nb")


def test_leading_spaces_inner_blank_lines_and_case_still_count() -> None:
    assert not matches("a", " a")
    assert not matches("a\n\nb", "a\nb")
    assert not matches("\na", "a")
    assert not matches("Vanilla", "vanilla")


def test_a_line_of_only_dots_matches_any_run_of_lines_including_none() -> None:
    assert matches("first\n...\nlast", "first\nlast")
    assert matches("first\n...\nlast", "first\n1\n2\n3\nlast")
    assert not matches("first\n...\nlast", "first\n1\nlast!")
    assert matches("...", "")
    assert matches("...", "anything\nat all")


def test_dots_inside_a_line_match_text_on_that_line_only() -> None:
    assert matches("object at 0x...", "object at 0x7f3a2c")
    assert matches("id: ... end", "id: 42 end")
    assert not matches("id: ... end", "id: 42\nend")
    assert not matches("id: ... end", "id: 42 fin")
    assert matches("<...>", "<>")
    assert not matches("ab...ba", "aba")


def test_without_wildcards_allowed_dots_are_literal() -> None:
    assert not matches("...", "x", wildcards=False)
    assert matches("...", "...", wildcards=False)


def test_a_diff_shows_expected_then_actual() -> None:
    diff = unified_diff("a\nb\n", "a\nc\n", label="ch.md:3")
    assert "--- expected (ch.md:3)" in diff and "+++ actual" in diff
    assert "-b" in diff.splitlines() and "+c" in diff.splitlines()


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)
no_dots = text.filter(lambda s: "..." not in s)


@given(no_dots, text)
def test_wildcard_free_text_matches_exactly_what_normalises_to_it(
    expected: str, actual: str
) -> None:
    assert matches(expected, actual) == (normalise(expected) == normalise(actual))


@given(text)
def test_any_text_matches_itself(expected: str) -> None:
    assert matches(expected, expected, wildcards=False)


@given(text, text)
def test_comparison_never_crashes(expected: str, actual: str) -> None:
    assert isinstance(matches(expected, actual), bool)


# Pieces avoid dots (so joining cannot make new wildcards), whitespace (so
# trailing-space normalisation cannot eat a piece) and line breaks.
piece = st.text(string.ascii_letters + string.digits + "-_:<>()[]'\"", max_size=6)
filler = st.text(string.ascii_letters + string.digits + " .-", max_size=8).map(lambda s: s.rstrip())


@st.composite
def pattern_and_filled_output(draw: st.DrawFn) -> tuple[str, str]:
    pattern: list[str] = []
    output: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["literal", "inline", "run"]))
        if kind == "literal":
            line = draw(piece)
            pattern.append(line)
            output.append(line)
        elif kind == "inline":
            pieces = draw(st.lists(piece, min_size=2, max_size=4))
            pattern.append("...".join(pieces))
            filled = pieces[0]
            for part in pieces[1:]:
                filled += draw(filler).replace(" ", "_") + part
            output.append(filled)
        else:
            pattern.append("...")
            output.extend(draw(st.lists(filler, max_size=3)))
    return "\n".join(pattern), "\n".join(output)


@given(pattern_and_filled_output())
def test_filling_every_wildcard_with_text_gives_a_matching_output(
    case: tuple[str, str],
) -> None:
    expected, actual = case
    assert matches(expected, actual)


@given(pattern_and_filled_output(), st.integers(0, 8))
def test_a_pattern_line_the_output_never_printed_never_matches(
    case: tuple[str, str], position: int
) -> None:
    expected, actual = case
    # "~" is in neither alphabet, so no wildcard can stand in for this line.
    lines = expected.split("\n") if expected else []
    lines.insert(min(position, len(lines)), "~missing~")
    assert not matches("\n".join(lines), actual)
