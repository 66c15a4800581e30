"""Path containment: read_document reads regular files inside its folder, and nothing else.

Each test builds a real folder: notes, a subfolder, links that lead out and
in, a FIFO, and a planted secret beside the folder that no name may reach.
"""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strength import examples

from sovereign_agent.documents import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_NAME,
    DocumentError,
    build_document_tools,
    open_inside,
    read_document_text,
)
from sovereign_agent.tools import ToolCall

SECRET = "secret-token-7c1e-never-read"
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
NOTES = {
    "offer.md": "Vanilla is short this August.\n",
    "archive/may.md": "May: no changes.\n",
    "archive/2024/june.md": "June: cones are late.\n",
    ".hidden.md": "A note whose name starts with a dot is still a note.\n",
}


def build_folder(home: Path) -> Path:
    """A documents folder with every kind of entry, and a secret beside it."""
    (home / "private.txt").write_text(SECRET + "\n", encoding="utf-8")
    (home / "elsewhere").mkdir()
    (home / "elsewhere" / "note.md").write_text(SECRET + " elsewhere\n", encoding="utf-8")
    folder = home / "notes"
    for name, text in NOTES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "link-out.md").symlink_to(home / "private.txt")
    (folder / "folder-out").symlink_to(home / "elsewhere")
    (folder / "absolute-link.md").symlink_to("/etc/hostname")
    (folder / "link-in.md").symlink_to(folder / "offer.md")
    (folder / "archive" / "up").symlink_to(home)
    os.mkfifo(folder / "inbox")
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_folder(tmp_path_factory.mktemp("documents"))


@pytest.mark.parametrize("name", sorted(NOTES))
def test_a_regular_file_inside_the_folder_is_read(folder: Path, name: str) -> None:
    assert read_document_text(folder, name) == NOTES[name]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../private.txt", "goes up with .."),
        ("archive/../offer.md", "goes up with .."),
        ("archive/../../private.txt", "goes up with .."),
        ("/etc/passwd", "an absolute path"),
        ("//etc/passwd", "an absolute path"),
        ("link-out.md", "a link"),
        ("link-in.md", "a link"),
        ("absolute-link.md", "a link"),
        ("folder-out/note.md", "goes through a link"),
        ("archive/up/private.txt", "goes through a link"),
        ("offer.md/more.md", "through a file as if it were a folder"),
        ("inbox", "not a regular file"),
        ("archive", "not a regular file"),
        ("archive/", "not a regular file"),
        ("june.md", "no such document"),
        ("offer.md\x00.txt", "NUL"),
        ("", "names no file"),
        (".", "names no file"),
        ("./", "names no file"),
        ("a" * (MAX_DOCUMENT_NAME + 1), f"longer than {MAX_DOCUMENT_NAME} characters"),
        ("a" * 150 + "/" + "b" * 49, "no such document"),
    ],
)
def test_a_name_that_leads_anywhere_else_is_refused_with_its_reason(
    folder: Path, name: str, reason: str
) -> None:
    with pytest.raises(DocumentError) as refused:
        read_document_text(folder, name)
    assert reason in refused.value.reason
    assert SECRET not in str(refused.value)


def test_a_component_too_long_for_the_file_system_is_refused(folder: Path) -> None:
    # 200 characters is within our bound; the bytes of "é" are not within the system's 255.
    with pytest.raises(DocumentError, match="too long for the file system"):
        read_document_text(folder, "é" * 200)


def test_a_fifo_is_refused_without_waiting_for_a_writer(folder: Path) -> None:
    # Opened with O_NONBLOCK and refused by fstat: the call returns at once,
    # and no descriptor is left open behind it.
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(DocumentError, match="not a regular file"):
        read_document_text(folder, "inbox")
    assert len(os.listdir("/proc/self/fd")) == before


def test_no_refusal_leaves_a_descriptor_open(folder: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for name in ("archive/up/private.txt", "offer.md/x", "archive", "missing/deep/x.md"):
        with pytest.raises(DocumentError):
            open_inside(folder, name)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_document_over_the_bound_is_refused(tmp_path: Path) -> None:
    (tmp_path / "exact.md").write_bytes(b"a" * MAX_DOCUMENT_BYTES)
    (tmp_path / "over.md").write_bytes(b"a" * (MAX_DOCUMENT_BYTES + 1))
    assert len(read_document_text(tmp_path, "exact.md")) == MAX_DOCUMENT_BYTES
    with pytest.raises(DocumentError, match=f"larger than {MAX_DOCUMENT_BYTES} bytes"):
        read_document_text(tmp_path, "over.md")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"price: 290\xff pence\n", "not UTF-8 text"),
        ("pay\u200b now\n".encode(), "U+200B"),
        ("\u202eredro ym\n".encode(), "U+202E"),
        ("visible\U000e0041\U000e0042\n".encode(), "U+E0041"),
        (b"bell\x07\n", "U+0007"),
        (b"escape \x1b[2J\n", "U+001B"),
    ],
)
def test_text_a_reader_cannot_see_is_refused(tmp_path: Path, content: bytes, reason: str) -> None:
    (tmp_path / "note.md").write_bytes(content)
    with pytest.raises(DocumentError) as refused:
        read_document_text(tmp_path, "note.md")
    assert reason in refused.value.reason


def test_tabs_line_breaks_and_a_leading_byte_order_mark_are_kept_or_dropped_as_text(
    tmp_path: Path,
) -> None:
    (tmp_path / "note.md").write_bytes("\ufeffa\tb\r\nc\n".encode())
    assert read_document_text(tmp_path, "note.md") == "a\tb\r\nc\n"


def test_a_missing_documents_folder_is_refused_when_the_tools_are_built(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="no such documents folder"):
        build_document_tools(SHOP, documents_root=str(tmp_path / "nowhere"))
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(DocumentError, match="no such documents folder"):
        build_document_tools(SHOP, documents_root=str(tmp_path / "file"))


# Names built from the pieces path tricks are made of, and from any text at all.
PIECES = st.sampled_from(
    [
        "..",
        ".",
        "/",
        "//",
        "\x00",
        "\\",
        "~",
        "offer.md",
        "archive",
        "may.md",
        "up",
        "folder-out",
        "link-out.md",
        "link-in.md",
        "note.md",
        "private.txt",
        "inbox",
        "notes",
        "%2e%2e",
        "\u2024\u2024",
        " ",
    ]
)
NAMES = st.one_of(
    st.lists(PIECES, max_size=8).map("".join),
    st.text(max_size=300),
    st.text(alphabet=string.printable, max_size=40),
)


@settings(
    max_examples=examples(600),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=NAMES)
def test_any_name_reads_one_of_the_folders_notes_or_is_refused(folder: Path, name: str) -> None:
    try:
        text = read_document_text(folder, name)
    except DocumentError as refused:
        assert SECRET not in str(refused)
        return
    # Whatever was read is the text of a regular file inside the folder, reached
    # without a link: one of the notes the folder was built with.
    assert text in NOTES.values()
    assert SECRET not in text


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=NAMES)
def test_no_name_sent_through_the_dispatcher_returns_the_secret(folder: Path, name: str) -> None:
    tools = build_document_tools(SHOP, documents_root=str(folder))
    outcome = tools.attempt(ToolCall(id="c1", name="read_document", arguments={"name": name}))
    assert SECRET not in str(outcome.observation)
    assert outcome.failure is None or SECRET not in outcome.failure.message
    if outcome.observation["ok"]:
        assert outcome.narrowing is not None
    else:
        # A read that failed let no text in, so it narrows nothing.
        assert outcome.narrowing is None
