"""No input gives a traceback: every unusable path, manifest or chapter is exit 2 with one line.

Run through the real script, as an author does, except where the operating
system cannot pass the input on a command line (a NUL): there `cli.run` is
called in-process, as a Python caller would.
"""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifying import verify

from bookproof.verify.cli import run
from bookproof.verify.manifest import ManifestError, load_manifest

CHAPTERS = Path(__file__).resolve().parent / "verify_fixtures" / "chapters"
DRAFTED = (
    '[[chapters]]\nnumber = 1\ntitle = "One"\nstatus = "drafted"\n'
    'text = "{text}"\ncheckpoint = "c.py"\nlearner = "l.py"\n'
    'exercises = "exercises/book01"\nsolutions = "solutions/book01"\n'
)


def assert_usage_error(completed_stderr: str, status: int, reason: str) -> None:
    assert status == 2
    assert "Traceback" not in completed_stderr
    (line,) = completed_stderr.strip().splitlines()
    assert line.startswith("verify-book: error: ")
    assert reason in line


@pytest.fixture
def oddities(tmp_path: Path) -> dict[str, Path]:
    """A link loop, a folder, a named pipe and a file named with a line break."""
    loop_a, loop_b = tmp_path / "loop_a.md", tmp_path / "loop_b.md"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    folder = tmp_path / "folder.md"
    folder.mkdir()
    pipe = tmp_path / "pipe.md"
    os.mkfifo(pipe)
    return {"loop": loop_a, "folder": folder, "pipe": pipe}


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("loop", "cannot verify it: a loop of symbolic links"),
        ("folder", "cannot verify it: a folder, not a file"),
        ("pipe", "cannot verify it: not a regular file (a pipe, socket or device)"),
    ],
)
def test_a_chapter_path_that_is_no_file_is_a_one_line_usage_error(
    oddities: dict[str, Path], name: str, reason: str
) -> None:
    completed = verify(oddities[name])
    assert_usage_error(completed.stderr, completed.returncode, f"{oddities[name]}: {reason}")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("loop", "cannot read the manifest: a loop of symbolic links"),
        ("folder", "cannot read the manifest: a folder, not a file"),
        ("pipe", "cannot read the manifest: not a regular file"),
    ],
)
def test_a_manifest_path_that_is_no_file_is_a_one_line_usage_error(
    oddities: dict[str, Path], name: str, reason: str
) -> None:
    completed = verify("--textbook", "--manifest", oddities[name])
    assert_usage_error(completed.stderr, completed.returncode, reason)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ch\\u0000.md", "the path holds a NUL character"),
        ("loop_a.md", "a loop of symbolic links"),
        ("folder.md", "a folder, not a file"),
        ("pipe.md", "not a regular file"),
        ("missing.md", "`text` names a missing file"),
    ],
)
def test_a_manifest_naming_a_path_that_is_no_file_is_a_one_line_usage_error(
    oddities: dict[str, Path], tmp_path: Path, text: str, reason: str
) -> None:
    manifest = tmp_path / "book.toml"
    manifest.write_text(DRAFTED.format(text=text), encoding="utf-8")
    completed = verify("--textbook", "--manifest", manifest)
    assert_usage_error(completed.stderr, completed.returncode, f"{manifest}:5: chapter 1: ")
    assert reason in completed.stderr


@pytest.mark.parametrize(
    "arguments",
    [["ch\x00.md"], ["--textbook", "--manifest", "book\x00.toml"]],
    ids=["chapter", "manifest"],
)
def test_a_nul_in_a_path_given_by_a_python_caller_is_a_one_line_usage_error(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = run(arguments)
    assert_usage_error(capsys.readouterr().err, status, "the path holds a NUL character")


def test_a_report_path_that_cannot_be_written_is_a_one_line_usage_error(tmp_path: Path) -> None:
    completed = verify(CHAPTERS / "passing.md", "--json", tmp_path)
    assert_usage_error(completed.stderr, completed.returncode, "cannot write a report: ")


def test_a_chapter_that_is_not_utf8_is_a_one_line_usage_error(tmp_path: Path) -> None:
    chapter = tmp_path / "latin1.md"
    chapter.write_bytes("# Caf\xe9\n".encode("latin-1"))
    completed = verify(chapter)
    assert_usage_error(completed.stderr, completed.returncode, "not UTF-8 text")


def test_an_unterminated_fence_is_an_error_naming_its_line(tmp_path: Path) -> None:
    chapter = tmp_path / "open.md"
    chapter.write_text(
        '# Open\n\n```python\nprint(1)\n```\n\n```output\n1\n```\n\n```python\nprint("x")\n',
        encoding="utf-8",
    )
    completed = verify(chapter)
    assert completed.returncode == 2
    assert f"{chapter}:11: the ``` fence opened here is never closed" in completed.stderr


# -- any manifest text: a manifest or a one-line ManifestError ---------------
keys = st.sampled_from(["number", "title", "status", "text", "checkpoint", "summary", "x"])
values = st.one_of(
    st.integers(-3, 3).map(str),
    st.sampled_from(['"drafted"', '"planned"', "1.5", "true", "[]", "{}", '"a\\u0000b"']),
    st.text(string.printable, max_size=12).map(lambda text: '"' + text.replace('"', "") + '"'),
)
entries = st.lists(st.tuples(keys, values), max_size=6).map(
    lambda pairs: "[[chapters]]\n" + "".join(f"{key} = {value}\n" for key, value in pairs)
)
manifests = st.lists(entries, max_size=3).map("\n".join) | st.text(max_size=200)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(manifests)
def test_any_manifest_text_loads_or_fails_with_one_line_naming_the_file(
    tmp_path: Path, text: str
) -> None:
    manifest = tmp_path / "book.toml"
    manifest.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_manifest(manifest)
    except ManifestError as error:
        message = str(error)
        assert message.startswith(str(manifest))
        assert "\n" not in message


@pytest.mark.parametrize(
    "nested",
    ["x = " + "[" * 100_000 + "]" * 100_000, "x = " + "{a = " * 5_000 + "1" + "}" * 5_000],
    ids=["array", "inline tables"],
)
def test_a_deeply_nested_manifest_is_a_one_line_usage_error(tmp_path: Path, nested: str) -> None:
    manifest = tmp_path / "book.toml"
    manifest.write_text(nested + "\n" + DRAFTED.format(text="ch.md"), encoding="utf-8")
    completed = verify("--textbook", "--manifest", manifest)
    assert_usage_error(
        completed.stderr, completed.returncode, f"{manifest}: malformed TOML: nested too deeply"
    )
