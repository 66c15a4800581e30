"""Where the verified repository lives and the environment its code runs in."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from bookproof.layout import DEFAULT_MANIFEST, REPO_ROOT

__all__ = [
    "DEFAULT_CACHE_DIR",
    "DEFAULT_MANIFEST",
    "REPO_ROOT",
    "SRC_DIR",
    "child_environment",
    "display_path",
    "python_executable",
]

# The repository is the one holding this package (`bookproof.layout` finds
# it), never the caller's working directory nor the chapter's folder: a
# chapter verified from anywhere sees the same files.
SRC_DIR = REPO_ROOT / "src"
# Where `--textbook` keeps the verdicts of chapters that held (ignored by git).
DEFAULT_CACHE_DIR = REPO_ROOT / "build" / "verify-cache"

# Variables that would let a listing reach a real model, or make its output
# depend on the machine. The book is verified offline and identically everywhere.
_DROPPED_PREFIXES = (
    "SOVEREIGN_",
    "OPENAI_",
    "ANTHROPIC_",
    "OPENROUTER_",
    "GEMINI_",
    "GOOGLE_API",
    "GOOGLE_GENAI",
    "MISTRAL_",
    "GROQ_",
    "OLLAMA_",
    "AZURE_OPENAI",
    "DEEPSEEK_",
    "TOGETHER_",
    "FIREWORKS_",
    "COHERE_",
    "XAI_",
    "HF_",
    "HUGGINGFACE",
    "LITELLM_",
)
_DROPPED_NAMES = frozenset(
    {
        "PYTHONSTARTUP",
        "PYTHONINSPECT",
        "PYTHONHOME",
        "PYTHONBREAKPOINT",
        "PYTHONWARNINGS",
        "VIRTUAL_ENV_PROMPT",
    }
)
_FIXED = {
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
    "PYTHONUTF8": "1",
    # Printed text reaches the file at once, interleaved with a child process's
    # output as a reader sees it at a terminal, whatever the author's shell sets.
    "PYTHONUNBUFFERED": "1",
    "TZ": "UTC",
    "LC_ALL": "C.UTF-8",
    "LANG": "C.UTF-8",
    "COLUMNS": "80",
    "LINES": "24",
    "NO_COLOR": "1",
}


def child_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every process that runs book code.

    Provider keys are dropped so a listing can never pay for or depend on a
    real model; hash seed, locale and time zone are pinned so that output does
    not vary between machines; `src/` comes first on the import path.
    """
    source = os.environ if base is None else base
    env = {
        key: value
        for key, value in source.items()
        if key not in _DROPPED_NAMES and not key.upper().startswith(_DROPPED_PREFIXES)
    }
    env.update(_FIXED)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SRC_DIR) + (os.pathsep + existing if existing else "")
    return env


def python_executable() -> str:
    """The interpreter that runs book code: the verifier's own, so versions agree."""
    return sys.executable


def display_path(path: Path) -> str:
    """A path as a reader at the terminal would type it (relative when under the cwd)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
