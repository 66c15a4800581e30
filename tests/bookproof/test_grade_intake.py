"""Untrusted input the grader reads before and around a sandbox: names, folders, stand-in requests.

Property tests: any name becomes printable text that says which name it was;
any tree of plain files is copied exactly; any bytes a learner's tests send
to the oracle get one answer per line and never stop it; any path they name
lands inside the run's own folder.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.grade.books import load_book
from bookproof.grade.child.encoding import decode_json
from bookproof.grade.intake import copy_submission, printable
from bookproof.grade.oracle import implementation, in_folder, load_reference, serve
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT


@given(st.text())
def test_a_printed_name_holds_nothing_a_terminal_acts_on(name: str) -> None:
    shown = printable(name)
    assert shown.isprintable()
    assert "\x1b" not in shown


@given(st.text(), st.text())
def test_two_names_print_differently_when_they_differ(first: str, second: str) -> None:
    if first != second:
        assert printable(first) != printable(second)


def test_undecodable_bytes_print_as_escapes() -> None:
    assert printable(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    assert printable("plain name") == "plain name"


names = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=["Cs"]),
    min_size=1,
    max_size=12,
).filter(lambda n: n not in {".", ".."} and n.encode("utf-8") and len(n.encode()) < 100)


@settings(max_examples=examples(40), deadline=None)
@given(
    st.dictionaries(
        st.lists(names, min_size=1, max_size=3).map(tuple), st.binary(max_size=200), max_size=6
    )
)
def test_any_tree_of_plain_files_is_copied_exactly(files: dict[tuple[str, ...], bytes]) -> None:
    base = Path(tempfile.mkdtemp())
    try:
        _copy_and_compare(base, files)
    finally:
        shutil.rmtree(base)


def _copy_and_compare(base: Path, files: dict[tuple[str, ...], bytes]) -> None:
    source = base / "in"
    source.mkdir()
    written: dict[Path, bytes] = {}
    for parts, data in files.items():
        if any(
            part in {"__pycache__", ".git", ".ipynb_checkpoints", ".pytest_cache", ".venv"}
            for part in parts
        ):
            continue
        path = source.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                continue
            path.write_bytes(data)
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            continue
        written[path.relative_to(source)] = data
    problem = copy_submission(source, base / "out", [])
    assert problem is None
    copied = {
        path.relative_to(base / "out"): path.read_bytes()
        for path in (base / "out").rglob("*")
        if path.is_file()
    }
    assert copied == written


def test_a_missing_required_file_is_named_in_the_refusal(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "shop_tool.py").write_text("x = 1\n")
    problem = copy_submission(tmp_path / "in", tmp_path / "out", ["shop_tools.py"])
    assert problem == "No shop_tools.py in this folder: hand in a file named exactly shop_tools.py."


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.binary(max_size=300).filter(lambda b: b"\n" not in b), max_size=8))
def test_any_request_from_a_learners_tests_gets_one_answer_and_never_stops_the_oracle(
    requests: list[bytes],
) -> None:
    book = load_book(2)
    (group,) = book.groups()
    reference = load_reference(book, str(book.reference(ROOT)))
    try:
        functions = implementation(group, reference, None, random.Random(0))
        constants = {name: getattr(reference, name) for name in group.surface.constants}
        ours, theirs = socket.socketpair()
        server = threading.Thread(target=serve, args=(theirs, group, functions, constants))
        server.start()
        with ours:
            reader = ours.makefile("rb")
            for request in [*requests, b'{"constants": true}']:
                ours.sendall(request + b"\n")
                answer = decode_json(reader.readline())
                assert isinstance(answer, dict)
                assert answer["status"] in {"returned", "object", "raised", "wrong_type"}
            ours.shutdown(socket.SHUT_WR)
            server.join(timeout=30)
        assert not server.is_alive()
        theirs.close()
    finally:
        sys.modules.pop(book.module, None)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(["..", ".", "", "tmp", "a b", "lucy.db", "/", "//"]), max_size=8))
def test_any_path_a_test_names_lands_inside_the_runs_folder(parts: list[str]) -> None:
    path = "/".join(parts)
    with tempfile.TemporaryDirectory() as folder:
        inside = in_folder(path, folder)
        assert os.path.realpath(inside) == os.path.realpath(folder) or os.path.realpath(
            inside
        ).startswith(os.path.realpath(folder) + os.sep)
        # The same path names the same file for the whole run; its folder exists.
        assert in_folder(path, folder) == inside
        assert os.path.isdir(os.path.dirname(inside))


def test_a_path_that_is_not_text_is_left_to_the_code_under_test(tmp_path: Path) -> None:
    assert in_folder(7, str(tmp_path)) == 7
    assert in_folder(None, str(tmp_path)) is None
