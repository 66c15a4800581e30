"""A suite that would break the reader: deep nesting, a FIFO, a repeat count nobody meant.

Each suite is given to the real command in a fresh process (with a timeout,
so a hang fails instead of blocking the suite), and must end in one line and
exit status 2, never a traceback. A folder, a missing file, a repeat count
out of bounds and `--help` cannot hang: the command's `main` answers them in
this process, as it does in its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from morning_plan import ROOT
from strength import examples

from sovereign_agent.evaluate import SuiteError, load_suite
from sovereign_agent.evaluate.__main__ import MAX_REPEAT, main
from sovereign_agent.trace.inputs import MAX_DEPTH

SUITE = ROOT / "book/textbook/suites/morning_reorder.toml"


def evaluate(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.evaluate", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def evaluate_here(
    capsys: pytest.CaptureFixture[str], *argv: str
) -> subprocess.CompletedProcess[str]:
    """What `python -m sovereign_agent.evaluate` exits with and prints, by its `main` here."""
    capsys.readouterr()  # only what this command prints
    try:
        status = main(list(argv))
    except SystemExit as exit:  # argparse's --help and usage errors
        status = exit.code
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), status, printed.out, printed.err)


# Dotted keys nest without recursing in tomllib, so they reach a walk of the
# result: three times the recursion limit is past what any recursive walk
# survives. (tomllib reads such a key in time quadratic in its length: ten
# thousand parts took a second, and proved no more.)
PAST_RECURSION = 3 * sys.getrecursionlimit()
DEEP = {
    "array of 100,000": "x = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "inline tables": "x = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n",
    "array just past the limit": "x = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "dotted keys": "a" + ".a" * PAST_RECURSION + " = 1\n",
    "table header": "[" + ".".join(["t"] * PAST_RECURSION) + "]\n",
}


@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_a_deeply_nested_suite_is_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    suite = tmp_path / "deep.toml"
    suite.write_text(SUITE.read_text(encoding="utf-8") + text, encoding="utf-8")
    result = evaluate(str(suite), "--repeat", "1", "--quiet")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {suite}: nested deeper than {MAX_DEPTH} levels\n"


def test_nesting_within_the_limit_reaches_the_suites_own_checks(tmp_path: Path) -> None:
    suite = tmp_path / "shallow.toml"
    depth = MAX_DEPTH - 1  # the document itself is the first level
    suite.write_text(
        "x = " + "[" * depth + "]" * depth + "\n" + SUITE.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    with pytest.raises(SuiteError, match=r"shallow.toml: x: Extra inputs are not permitted"):
        load_suite(suite)


def test_a_fifo_named_as_the_suite_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "suite.toml"
    os.mkfifo(fifo)
    result = evaluate(str(fifo), "--repeat", "1", timeout=30)
    assert result.returncode == 2
    assert result.stderr == f"error: {fifo}: a FIFO, not a regular file\n"


def test_a_folder_or_a_missing_suite_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = evaluate_here(capsys, str(tmp_path))
    assert folder.stderr == f"error: {tmp_path}: a folder, not a regular file\n"
    missing = tmp_path / "none.toml"
    assert evaluate_here(capsys, str(missing)).stderr == f"error: {missing}: no such file\n"


@pytest.mark.parametrize("repeat", ["0", str(MAX_REPEAT + 1), "100000000"])
def test_repeat_outside_its_bound_is_refused_saying_why(
    capsys: pytest.CaptureFixture[str], repeat: str
) -> None:
    result = evaluate_here(capsys, str(SUITE), "--repeat", repeat)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: --repeat must be 1 to {MAX_REPEAT}: ")
    assert "real requests" in result.stderr


def test_the_help_gives_the_repeat_bound_and_its_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = evaluate_here(capsys, "--help")
    assert f"1 to {MAX_REPEAT}" in result.stdout
    assert "typo" in result.stdout


def test_escapes_in_a_suites_names_are_printed_escaped(tmp_path: Path) -> None:
    suite = tmp_path / "escapes.toml"
    text = SUITE.read_text(encoding="utf-8")
    suite.write_text(
        text.replace('name = "full descriptions"', 'name = "full\\u001b[2J\\u202e"', 1),
        encoding="utf-8",
    )
    result = evaluate(str(suite), "--repeat", "1")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout + result.stderr
    assert "\u202e" not in result.stdout + result.stderr
    assert "full\\x1b[2J\\u202e" in result.stdout


toml_texts = st.lists(
    st.sampled_from(
        ["[", "]", "{", "}", "a", " = ", "1", '"x"', ",", ".", "\n", "[[tasks]]", "[shop]"]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=examples(200), deadline=None)
@given(extra=toml_texts, depth=st.integers(0, 3_000))
def test_any_suite_text_loads_or_is_one_suite_error(extra: str, depth: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "s.toml"
        nested = "n = " + "[" * depth + "]" * depth + "\n" if depth else ""
        suite.write_text(nested + extra + "\n" + SUITE.read_text(encoding="utf-8"))
        try:
            load_suite(suite)
        except SuiteError as error:
            assert str(error).startswith(str(suite))
            assert "\n" not in str(error)
