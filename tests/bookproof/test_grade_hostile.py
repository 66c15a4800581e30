"""Hostile and broken submissions, graded in ONE batch beside the reference solution.

Each hostile folder is the reference solution or the starter with one nasty
change, written into tmp_path. The grader runs as a real subprocess with
-j 2, and the reference solution must still get full marks in the same batch.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = (ROOT / "solutions" / "book02" / "shop_tools.py").read_text(encoding="utf-8")
STARTER = (ROOT / "exercises" / "book02" / "shop_tools.py").read_text(encoding="utf-8")
SECRET = "secret-token-7f3c9a11e2"
TIMEOUT = "6"

# Code prepended to the reference solution (runs at import) or appended to it.
PREFIX: dict[str, str] = {
    "exit_at_import": "import sys\nsys.exit(3)\n",
    "os_exit_at_import": "import os\nos._exit(0)\n",
    "loop_at_import": "while True:\n    pass\n",
    "memory_bomb": "hoard = []\nwhile True:\n    hoard.append(bytearray(50_000_000))\n",
    "flood_stdout": "while True:\n    print('x' * 10_000)\n",
    "flood_stderr": "import sys\nwhile True:\n    sys.stderr.write('y' * 10_000)\n",
    "raise_at_import": f"raise RuntimeError({SECRET!r})\n",
    "fake_report": textwrap.dedent(
        """
        import json, pathlib
        FAKE = {"submissions": [{"submission": "fake_report", "total": 28, "max": 28,
                "checks": [{"id": "ex2_need_reserved", "points": 2, "passed": True}]}]}
        print(json.dumps(FAKE))
        for name in ("out.json", "../out.json", "report.json", "grade.json"):
            try:
                pathlib.Path(name).write_text(json.dumps(FAKE))
            except OSError:
                pass
        """
    ),
    "forges_channel": textwrap.dedent(
        """
        import os
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                try:
                    os.write(fd, b'{"k": "done", "n": "guess"}\\n')
                except OSError:
                    pass
        """
    ),
    "disk_filler": textwrap.dedent(
        """
        import os
        try:
            with open("filler.bin", "wb") as handle:
                for _ in range(100):
                    handle.write(b"z" * 1_000_000)
        except OSError:
            pass
        FILLED = os.path.getsize("filler.bin")
        """
    ),
    "forker": textwrap.dedent(
        """
        import os, time
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        """
    ),
}

# Code appended to the REFERENCE solution: it keeps every right answer, and
# tries to break the harness's reporting; a sound harness still gives 28/28.
HONEST_PATCHER = textwrap.dedent(
    """
    import builtins, json, os, sys
    import json.encoder

    sys.exit = lambda *a: None
    os._exit = lambda *a: None
    os.write = lambda fd, data: len(data)
    builtins.print = lambda *a, **k: None
    harness = sys.modules.get("bookproof.grade.harness")
    if harness is not None:
        harness.EXCEPTION_NAMES = ()
        harness.make_encoder = lambda: (lambda value: '"forged"')

    # json is sabotaged whenever control is back in the grader's harness, and
    # restored while this module's own code (and Pydantic) runs.
    REAL = (json.dumps, json.loads, json.encoder.encode_basestring_ascii,
            json.encoder.c_make_encoder)

    def sabotage():
        json.dumps = lambda *a, **k: '{"ok": true}'
        json.loads = lambda *a, **k: {"forged": True}
        json.encoder.encode_basestring_ascii = lambda s: '"forged"'
        json.encoder.c_make_encoder = None

    def restore():
        (json.dumps, json.loads, json.encoder.encode_basestring_ascii,
         json.encoder.c_make_encoder) = REAL

    def guarded(function):
        def wrapper(*args, **kwargs):
            restore()
            try:
                return function(*args, **kwargs)
            finally:
                sabotage()
        return wrapper

    Dispatcher.schemas = guarded(Dispatcher.schemas)
    Dispatcher.invoke = guarded(Dispatcher.invoke)
    build_tools = guarded(build_tools)
    replenishment_need = guarded(replenishment_need)
    sabotage()
    """
)

# Appended to the STARTER: tries to make wrong answers look right.
LIAR = textwrap.dedent(
    """
    import builtins
    builtins.isinstance = lambda obj, cls: True
    builtins.type = lambda *args: dict

    class Anything(dict):
        def __eq__(self, other):
            return True
        __hash__ = dict.__hash__

    _real_need = replenishment_need

    def replenishment_need(row):
        return Anything()

    _real_build = build_tools

    def build_tools(*args, **kwargs):
        dispatcher = _real_build(*args, **kwargs)
        real_invoke = dispatcher.invoke
        class Wrapped:
            def schemas(self):
                return dispatcher.schemas()
            def invoke(self, call):
                value = real_invoke(call)
                if value.get("ok"):
                    return Anything(value)
                return value
        return Wrapped()
    """
)

WRONG_TYPES = textwrap.dedent(
    """
    _real_need = replenishment_need

    def replenishment_need(row):
        return float(_real_need(row))
    """
)

# The reference solution, except that one check's path hangs and another's
# raises an exception whose text (and class name) carries the secret.
HANG_ONE = textwrap.dedent(
    f"""
    _real_schemas = Dispatcher.schemas

    def _schemas(self):
        if any(name.startswith("probe_") for name in self.allowed):
            while True:
                pass
        return _real_schemas(self)

    Dispatcher.schemas = _schemas

    _need = replenishment_need
    Leak = type({SECRET!r}, (LookupError,), {{}})

    def replenishment_need(row):
        if row.get("reserved") == 3 and row["on_hand"] == 2:
            raise Leak({SECRET!r})
        return _need(row)
    """
)


# The reference solution, except that the need allocates without bound.
MEMORY_IN_CHECK = textwrap.dedent(
    """
    _need_before = replenishment_need

    def replenishment_need(row):
        if row.get("reserved") == 3 and row["on_hand"] == 2:
            hoard = []
            while True:
                hoard.append(bytearray(50_000_000))
        return _need_before(row)
    """
)


def _write(folder: Path, text: str) -> Path:
    folder.mkdir()
    (folder / "shop_tools.py").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("hostile")
    folders = [_write(base / "reference", SOLUTION)]
    for name, prefix in PREFIX.items():
        folders.append(_write(base / name, prefix + SOLUTION))
    folders.append(_write(base / "honest_patcher", SOLUTION + HONEST_PATCHER))
    folders.append(_write(base / "liar", STARTER + LIAR))
    folders.append(_write(base / "wrong_types", SOLUTION + WRONG_TYPES))
    folders.append(_write(base / "hang_one", SOLUTION + HANG_ONE))
    folders.append(_write(base / "memory_in_check", SOLUTION + MEMORY_IN_CHECK))
    empty = base / "no_file"
    empty.mkdir()
    (empty / "shop_tool.py").write_text(SOLUTION, encoding="utf-8")
    folders.append(empty)
    out_json = base / "report.json"
    out_csv = base / "gradebook.csv"
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "grade_exercises.py"),
            "--book",
            "2",
            *map(str, folders),
            "-j",
            "2",
            "--timeout",
            TIMEOUT,
            "--json",
            str(out_json),
            "--csv",
            str(out_csv),
        ],
        capture_output=True,
        text=True,
        cwd=base,
        timeout=600,
    )
    report = json.loads(out_json.read_text(encoding="utf-8"))
    return {
        "completed": completed,
        "report": report,
        "by_name": {entry["submission"]: entry for entry in report["submissions"]},
        "json_text": out_json.read_text(encoding="utf-8"),
        "csv_text": out_csv.read_text(encoding="utf-8"),
        "base": base,
    }


def _outcomes(entry: dict[str, Any]) -> set[str]:
    return {check["outcome"] for check in entry["checks"]}


def test_grading_a_hostile_batch_exits_zero_and_reports_every_folder(batch: dict) -> None:
    assert batch["completed"].returncode == 0, batch["completed"].stderr
    expected = {
        "reference",
        "honest_patcher",
        "liar",
        "wrong_types",
        "hang_one",
        "memory_in_check",
        "no_file",
    }
    assert set(batch["by_name"]) == expected | set(PREFIX)


def test_reference_solution_keeps_full_marks_beside_hostile_submissions(batch: dict) -> None:
    entry = batch["by_name"]["reference"]
    assert entry["total"] == entry["max"] == 28
    assert _outcomes(entry) == {"passed"}


@pytest.mark.parametrize(
    ("name", "outcome", "phrase"),
    [
        ("exit_at_import", "crashed", "Called exit while importing shop_tools.py"),
        ("os_exit_at_import", "crashed", "The process ended while importing shop_tools.py"),
        ("loop_at_import", "timeout", "Did not finish importing within 6 s"),
        ("memory_bomb", "out of memory", "Ran out of memory while importing"),
        ("flood_stdout", "crashed", "Printed more than"),
        ("flood_stderr", "crashed", "Printed more than"),
        ("raise_at_import", "error", "Raised Exception while importing shop_tools.py"),
        ("forges_channel", "crashed", "private result channel"),
    ],
)
def test_submission_broken_at_import_scores_zero_with_a_clear_line(
    batch: dict, name: str, outcome: str, phrase: str
) -> None:
    entry = batch["by_name"][name]
    assert entry["total"] == 0
    assert _outcomes(entry) == {outcome}
    assert all(phrase in check["feedback"] for check in entry["checks"])


def test_printing_or_writing_a_fake_report_changes_nothing(batch: dict) -> None:
    # The fake report is printed and written to out.json; the reference code
    # below it is still graded on what it does, and no fake file escapes.
    entry = batch["by_name"]["fake_report"]
    assert entry["total"] == 28
    assert not (batch["base"] / "out.json").exists()
    assert "fake_report" not in batch["completed"].stdout.split("fake_report:")[0]


def test_writing_a_huge_file_is_cut_at_the_file_size_limit(batch: dict) -> None:
    # The write fails at the limit (8 MiB), the code after it still runs and
    # the temporary copy is gone; the folder handed in is untouched.
    assert batch["by_name"]["disk_filler"]["total"] == 28
    assert not (batch["base"] / "disk_filler" / "filler.bin").exists()


def test_memory_bomb_in_one_function_costs_only_the_checks_that_call_it(batch: dict) -> None:
    entry = batch["by_name"]["memory_in_check"]
    lost = {check["id"]: check["outcome"] for check in entry["checks"] if not check["passed"]}
    assert lost == {
        "ex2_need_reserved": "out of memory",
        "ex2_report_reserved": "out of memory",
        "ex2_draft_reserved": "out of memory",
    }


def test_forked_grandchild_neither_hangs_the_grader_nor_costs_points(batch: dict) -> None:
    assert batch["by_name"]["forker"]["total"] == 28


def test_patching_builtins_json_and_exit_cannot_corrupt_the_report(batch: dict) -> None:
    entry = batch["by_name"]["honest_patcher"]
    assert entry["total"] == 28, [c for c in entry["checks"] if not c["passed"]]


def test_objects_that_equal_everything_are_wrong_types_not_passes(batch: dict) -> None:
    entry = batch["by_name"]["liar"]
    passed = {check["id"] for check in entry["checks"] if check["passed"]}
    # Every value it returns claims to equal anything; none of it is plain data.
    assert not passed & {
        "ex2_need_reserved",
        "ex2_reserved_absent",
        "ex2_above_target",
        "ch2_vanilla_draft",
        "ex1_mango_1300",
        "ex3_probe_allowed",
    }
    assert entry["total"] < 20  # below even the untouched starter


def test_float_instead_of_int_fails_every_check_that_sees_the_need(batch: dict) -> None:
    # 6.0 == 6 in Python; the grader compares types too, so a float need fails
    # wherever it shows: in replenishment_need and in every list_stock report.
    entry = batch["by_name"]["wrong_types"]
    failed = {check["id"] for check in entry["checks"] if not check["passed"]}
    assert failed == {
        "ex2_need_reserved",
        "ex2_reserved_absent",
        "ex2_above_target",
        "ch2_stock_report",
        "ch2_vanilla_draft",
        "ch2_own_copy",
        "ex1_mango_1300",
        "ex1_data_change",
        "ex2_report_reserved",
    }


def test_a_hang_in_one_check_costs_that_check_only(batch: dict) -> None:
    entry = batch["by_name"]["hang_one"]
    by_id = {check["id"]: check for check in entry["checks"]}
    assert by_id["ex3_probe_allowed"]["outcome"] == "timeout"
    assert by_id["ex2_need_reserved"]["outcome"] == "error"
    assert "Raised LookupError" in by_id["ex2_need_reserved"]["feedback"]
    lost = {check["id"] for check in entry["checks"] if not check["passed"]}
    assert lost == {
        "ex3_probe_allowed",
        "ex2_need_reserved",
        "ex2_report_reserved",
        "ex2_draft_reserved",
    }


def test_folder_without_shop_tools_is_a_graded_zero_naming_the_file(batch: dict) -> None:
    entry = batch["by_name"]["no_file"]
    assert entry["total"] == 0
    assert all("No shop_tools.py in this folder" in c["feedback"] for c in entry["checks"])


def test_planted_secret_reaches_no_report(batch: dict) -> None:
    completed = batch["completed"]
    for text in (batch["json_text"], batch["csv_text"], completed.stdout, completed.stderr):
        assert SECRET not in text
        assert "secret-token" not in text


def test_csv_gradebook_has_one_row_per_submission_and_a_total(batch: dict) -> None:
    rows = list(csv.DictReader(batch["csv_text"].splitlines()))
    assert len(rows) == len(batch["by_name"])
    for row in rows:
        entry = batch["by_name"][row["submission"]]
        assert int(row["total"]) == entry["total"]
        assert sum(int(row[c["id"]]) for c in entry["checks"]) == entry["total"]
