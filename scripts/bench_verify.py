"""Time the verifier against a baseline measured in the same run.

    uv run python scripts/bench_verify.py [--manifest PATH] [--repeat N]

Baseline, per drafted chapter: its executed listings concatenated into one
plain script and run once, its checkpoint run directly, its learner file
imported, one process after another. The verifier is timed on the same
chapters with -j 1 and -j 2 (`--textbook`, as CI runs it). Prints the medians,
the ratio verifier(-j 1) / baseline (goal: at most 1.5) and the speed-up of
-j 2 over -j 1.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bookproof.verify.chapter import read_chapter
from bookproof.verify.environment import (
    DEFAULT_MANIFEST,
    REPO_ROOT,
    child_environment,
    display_path,
)
from bookproof.verify.manifest import ManifestChapter, load_manifest

_AWAIT_RUNNER = """\
import ast, asyncio, sys
path = sys.argv[1]
code = compile(open(path).read(), path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""
_IMPORT = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("learner_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
"""


def _plain_script(chapter: ManifestChapter, folder: Path) -> list[str]:
    """The command that runs the chapter's listings as one ordinary script."""
    assert chapter.text is not None
    parsed = read_chapter(chapter.text)
    parts = []
    for listing in parsed.listings:
        source = listing.fence.content
        if listing.fence.kind == "raises":
            # The listing is meant to raise; the script carries on after it.
            body = textwrap.indent(source, "    ") or "    pass"
            source = f"try:\n{body}\nexcept BaseException:\n    pass\n"
        parts.append(source)
    script = folder / f"ch{chapter.number:02d}_listings.py"
    script.write_text("\n".join(parts), encoding="utf-8")
    code = compile(script.read_text(), str(script), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if code.co_flags & inspect.CO_COROUTINE:
        return [sys.executable, "-c", _AWAIT_RUNNER, str(script)]
    return [sys.executable, str(script)]


def _run(command: list[str]) -> None:
    subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=child_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )


def _baseline(commands: list[list[str]]) -> float:
    started = time.perf_counter()
    for command in commands:
        _run(command)
    return time.perf_counter() - started


def _verifier(manifest: Path, jobs: int) -> tuple[float, int]:
    started = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "scripts" / "verify_book_assets_v2.py"),
            "--textbook",
            "--manifest",
            str(manifest),
            "-j",
            str(jobs),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - started, completed.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    manifest = load_manifest(arguments.manifest)
    drafted = [c for c in manifest.chapters if c.drafted]
    print(f"manifest {display_path(arguments.manifest)}: {len(drafted)} drafted chapter(s)")
    if not drafted:
        print("nothing to time: no chapter is drafted")
        return
    with tempfile.TemporaryDirectory() as folder:
        commands: list[list[str]] = []
        for chapter in drafted:
            assert chapter.checkpoint is not None and chapter.learner is not None
            commands.append(_plain_script(chapter, Path(folder)))
            commands.append([sys.executable, str(chapter.checkpoint)])
            commands.append([sys.executable, "-c", _IMPORT, str(chapter.learner)])
        # One untimed round warms the file cache and the bytecode caches for everyone.
        _baseline(commands)
        _verifier(arguments.manifest, 1)
        baseline, single, double = [], [], []
        statuses = set()
        for _ in range(arguments.repeat):
            baseline.append(_baseline(commands))
            seconds, status = _verifier(arguments.manifest, 1)
            single.append(seconds)
            statuses.add(status)
            seconds, status = _verifier(arguments.manifest, 2)
            double.append(seconds)
            statuses.add(status)
    b, s, d = (statistics.median(x) for x in (baseline, single, double))
    print(
        f"runs per figure: {arguments.repeat} (medians); verifier exit statuses {sorted(statuses)}"
    )
    print(f"baseline (plain scripts, checkpoints, learner imports): {b:.3f} s")
    print(f"verifier -j 1: {s:.3f} s")
    print(f"verifier -j 2: {d:.3f} s")
    print(f"ratio verifier -j 1 / baseline: {s / b:.2f} (goal <= 1.5)")
    print(f"speed-up -j 2 over -j 1: {s / d:.2f}x")


if __name__ == "__main__":
    main()
