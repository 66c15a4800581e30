"""Chapter 13's run_task, shown as a change to chapter 7's, is the loop the runtime runs.

The shared reader-file tests leave a `changes=` definition to the verifier,
which composes it with the earlier chapter's; this holds the composed result
in the learner file to the runtime's own `loop.py`, and the change the
section is about (a limit stops the run by its own name) to being there.
"""

from __future__ import annotations

from chapter_files import definitions

from bookproof.layout import REPO_ROOT

LEARNER = REPO_ROOT / "book/textbook/learner/profrod_sovereign_agent_ch13_limits_learner.py"


def test_the_learner_files_run_task_is_the_runtimes() -> None:
    runtime = definitions(REPO_ROOT / "src/sovereign_agent/loop.py")
    assert definitions(LEARNER)["run_task"] == runtime["run_task"]
    assert "except RunLimitReached as error:" in LEARNER.read_text(encoding="utf-8")
