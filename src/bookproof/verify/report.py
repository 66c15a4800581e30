"""The verifier's reports: progress lines, failures, the construction report, JSON, JUnit."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bookproof.verify.environment import display_path
from bookproof.verify.isolation import Isolation
from bookproof.verify.manifest import Manifest
from bookproof.verify.verdict import ChapterVerdict, Failure

__all__ = [
    "construction_report",
    "failure_text",
    "progress_line",
    "write_json",
    "write_junit",
]


def progress_line(verdict: ChapterVerdict) -> str:
    """One line per chapter, printed as soon as the chapter is verified."""
    label = f"ch{verdict.number:02d}" if verdict.number is not None else "-"
    if verdict.cached:
        return (
            f"{label:<5} {'cached':<6} {verdict.display}: not run, unchanged since it held "
            f"({verdict.cached_from}): {verdict.passed}/{len(verdict.blocks)} listings, "
            f"checkpoint {verdict.checkpoint}, learner {verdict.learner}"
        )
    state = "ok" if verdict.ok else "FAILED"
    return (
        f"{label:<5} {state:<6} {verdict.display}: "
        f"{verdict.passed}/{len(verdict.blocks)} listings, checkpoint {verdict.checkpoint}, "
        f"learner {verdict.learner} ({verdict.seconds:.1f} s)"
    )


def failure_text(failure: Failure) -> str:
    """A failure as the terminal shows it: location, message, then the indented detail."""
    head = f"{failure.file}:{failure.line}: {failure.message}"
    if failure.cascade_of:
        head += f"\n  (after the first failure, at {failure.cascade_of}; may follow from it)"
    if failure.detail:
        head += "\n" + "\n".join(f"    {line}" for line in failure.detail.splitlines())
    return head


def _row(number: int, title: str, status: str, rest: str) -> str:
    return f"  {number:>2}  {title[:34]:<34}  {status:<7}  {rest}".rstrip()


def construction_report(
    manifest: Manifest | None,
    verdicts: Sequence[ChapterVerdict],
    *,
    textbook: bool,
    isolation: Isolation,
) -> list[str]:
    """One line per chapter (every manifest chapter with --textbook), a summary line, and
    how the book's code ran (isolated or not: never left unsaid)."""
    lines: list[str] = []
    by_number = {v.number: v for v in verdicts if v.number is not None}
    planned = 0
    if manifest is not None and textbook:
        lines.append(f"Construction report ({display_path(manifest.path)})")
        for chapter in manifest.chapters:
            if not chapter.drafted:
                planned += 1
                lines.append(_row(chapter.number, chapter.title, "planned", "(not verified)"))
                continue
            verdict = by_number[chapter.number]
            lines.append(_row(chapter.number, chapter.title, "drafted", _columns(verdict)))
    else:
        lines.append("Construction report (chapter files named on the command line)")
        for verdict in verdicts:
            if verdict.number is not None and verdict.title is not None:
                lines.append(_row(verdict.number, verdict.title, "drafted", _columns(verdict)))
            else:
                lines.append(f"   -  {verdict.display:<34}  {'file':<7}  {_columns(verdict)}")
    # A cached verdict is not a pass of this run: counted apart, never as verified.
    fresh = [v for v in verdicts if not v.cached]
    cached = [v for v in verdicts if v.cached]
    held = sum(1 for v in fresh if v.ok)
    failed = len(fresh) - held
    passed = sum(v.passed for v in fresh)
    total = sum(len(v.blocks) for v in fresh)
    summary = (
        f"Summary: {len(fresh)} chapter(s) verified, {held} hold, {failed} failed"
        f"{f', {len(cached)} cached (not run: unchanged since they held)' if cached else ''}"
        f"{f', {planned} planned (not verified)' if textbook and manifest else ''}; "
        f"listings {passed}/{total} passed"
        f"{f' ({sum(len(v.blocks) for v in cached)} more cached)' if cached else ''}; "
        f"{'everything verified holds' if failed == 0 else 'FAILED'}"
    )
    # Before the summary, which stays the last line (scripts read it there).
    lines.append(f"Isolation: {isolation.describe()}")
    lines.append(summary)
    return lines


def _columns(verdict: ChapterVerdict) -> str:
    verdict_word = "cached" if verdict.cached else "holds" if verdict.ok else "FAILED"
    return (
        f"listings {verdict.passed}/{len(verdict.blocks)}  checkpoint {verdict.checkpoint:<11}  "
        f"learner {verdict.learner:<6}  exercises {verdict.exercises:<7}  {verdict_word}"
    )


def _failure_record(failure: Failure) -> dict[str, Any]:
    return {
        "file": failure.file,
        "line": failure.line,
        "kind": failure.kind,
        "message": failure.message,
        "detail": failure.detail,
        "cascade_of": failure.cascade_of,
    }


def write_json(
    path: Path,
    manifest: Manifest | None,
    verdicts: Sequence[ChapterVerdict],
    exit_status: int,
    isolation: Isolation,
) -> None:
    """The whole verdict as one JSON object, for CI dashboards and tests."""
    import json

    by_path = {v.path.resolve(): v for v in verdicts}
    planned = []
    if manifest is not None:
        planned = [
            {"number": c.number, "title": c.title, "status": "planned"}
            for c in manifest.chapters
            if not c.drafted
        ]
    document = {
        "ok": exit_status == 0,
        "exit_status": exit_status,
        "chapters": [
            {
                "file": v.display,
                "number": v.number,
                "title": v.title,
                "status": "drafted" if v.number is not None else "file",
                "ok": v.ok,
                "listings": {"passed": v.passed, "total": len(v.blocks)},
                "blocks": [
                    {
                        "line": b.line,
                        "output_line": b.output_line,
                        "mode": b.mode,
                        "status": b.status,
                    }
                    for b in v.blocks
                ],
                "checkpoint": v.checkpoint,
                "learner": v.learner,
                "exercises": v.exercises,
                "coverage": {
                    "exact": v.coverage.exact,
                    "wildcard": v.coverage.wildcard,
                    "no_output": v.coverage.no_output,
                    "skipped": v.coverage.skipped,
                    "checkpoint_checked": v.coverage.checkpoint_checked,
                    "checkpoint_not_checked": v.coverage.checkpoint_not_checked,
                },
                "failures": [_failure_record(f) for f in v.failures],
                "updated": list(v.updated),
                "warnings": list(v.warnings),
                "seconds": round(v.seconds, 3),
                "isolation": v.isolation,
                # "hit": not run now, unchanged since the run that ended at
                # `cached_from` (its seconds are that run's); "run": verified now.
                "cache": "hit" if v.cached else "run",
                "cached_from": v.cached_from,
            }
            for v in by_path.values()
        ],
        "planned": planned,
        "isolation": {
            "mode": isolation.mode,
            "reason": isolation.reason or None,
            "statement": isolation.describe(),
        },
        "summary": {
            "chapters": len(verdicts),
            # Verified in this run; a cached chapter counts only under "cached".
            "held": sum(1 for v in verdicts if v.ok and not v.cached),
            "failed": sum(1 for v in verdicts if not v.ok),
            "cached": sum(1 for v in verdicts if v.cached),
            "planned": len(planned),
            "listings_passed": sum(v.passed for v in verdicts if not v.cached),
            "listings_total": sum(len(v.blocks) for v in verdicts if not v.cached),
            "listings_cached": sum(len(v.blocks) for v in verdicts if v.cached),
        },
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


# What XML 1.0 allows in text and attributes; anything else makes the file
# unreadable to every JUnit consumer, so it is written as a visible escape.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _not_run(verdict: ChapterVerdict) -> str:
    if verdict.cached:
        return f"not run: cached, unchanged since it held ({verdict.cached_from})"
    return "not run"


def write_junit(path: Path, verdicts: Sequence[ChapterVerdict]) -> None:
    """JUnit XML: a suite per chapter, a case per listing, checkpoint and learner file."""
    import xml.etree.ElementTree as ElementTree

    def element(parent: ElementTree.Element, tag: str, **attributes: str) -> ElementTree.Element:
        return ElementTree.SubElement(
            parent, tag, {name: _xml(value) for name, value in attributes.items()}
        )

    def failed(case: ElementTree.Element, failure: Failure) -> None:
        element(case, "failure", message=failure.message, type=failure.kind).text = _xml(
            failure.detail
        )

    root = ElementTree.Element("testsuites", name="verify-book")
    all_tests = all_failures = all_skipped = 0
    for verdict in verdicts:
        suite = element(root, "testsuite", name=verdict.display)
        by_line: dict[int, list[Failure]] = {}
        others: list[Failure] = []
        block_lines = {b.line for b in verdict.blocks}
        for failure in verdict.failures:
            if failure.file == verdict.display and failure.line in block_lines:
                by_line.setdefault(failure.line, []).append(failure)
            else:
                others.append(failure)
        tests = failures = skipped = 0
        for block in verdict.blocks:
            tests += 1
            case = element(
                suite, "testcase", classname=verdict.display, name=f"listing at line {block.line}"
            )
            if block.status == "not-run" or verdict.cached:
                skipped += 1
                element(case, "skipped", message=_not_run(verdict))
                continue
            for failure in by_line.get(block.line, []):
                failures += 1
                failed(case, failure)
        for name, state in (("checkpoint", verdict.checkpoint), ("learner", verdict.learner)):
            tests += 1
            case = element(suite, "testcase", classname=verdict.display, name=name)
            if state in ("not checked", "none") or verdict.cached:
                skipped += 1
                element(case, "skipped", message=_not_run(verdict) if verdict.cached else state)
        for failure in others:
            name = "learner" if failure.kind in ("learner", "drift") else "checkpoint"
            if failure.kind in ("exercises", "figure"):
                name = failure.kind
            case = element(
                suite,
                "testcase",
                classname=verdict.display,
                name=f"{name}: {failure.file}:{failure.line}",
            )
            tests += 1
            failures += 1
            failed(case, failure)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
        suite.set("time", f"{verdict.seconds:.3f}")
        all_tests += tests
        all_failures += failures
        all_skipped += skipped
    root.set("tests", str(all_tests))
    root.set("failures", str(all_failures))
    root.set("skipped", str(all_skipped))
    ElementTree.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
