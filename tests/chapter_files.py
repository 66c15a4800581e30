"""What the tests of a chapter's reader files share: syntax trees, the checkpoint and its output.

A chapter's learner file, checkpoint and runtime module are compared by their
top-level definitions and constants (syntax trees, positions ignored); a
checkpoint is run as a reader runs it, in a subprocess, with only the provider
variables a test means to set.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from markdown_it import MarkdownIt

__all__ = ["PROVIDER_VARIABLES", "checkpoint_output", "constants", "definitions", "run_checkpoint"]

# Variables a developer's shell may carry; each test sets exactly the ones it means.
PROVIDER_VARIABLES = (
    "SOVEREIGN_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
)


def definitions(path: Path) -> dict[str, str]:
    """Each top-level function and class of a module, by name, as a syntax tree."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: ast.dump(node, include_attributes=False)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }


def constants(path: Path) -> dict[str, str]:
    """Each top-level assignment of a module but `__all__`, by name, as a syntax tree."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        target.id: ast.dump(node.value, include_attributes=False)
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in ([node.target] if isinstance(node, ast.AnnAssign) else node.targets)
        if isinstance(target, ast.Name) and target.id != "__all__" and node.value is not None
    }


def checkpoint_output(chapter: Path) -> str:
    """The chapter's one `checkpoint-output` block."""
    tokens = MarkdownIt("commonmark").parse(chapter.read_text(encoding="utf-8"))
    blocks = [t.content for t in tokens if t.type == "fence" and t.info == "checkpoint-output"]
    assert len(blocks) == 1
    return blocks[0]


def run_checkpoint(
    checkpoint: Path, cwd: Path, **variables: str
) -> subprocess.CompletedProcess[str]:
    """Run a checkpoint script from `cwd` with exactly the provider `variables` given."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    env.update(variables)
    return subprocess.run(
        [sys.executable, str(checkpoint)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
