"""What installs is the runtime alone, and it works outside a checkout.

The wheel is built with `uv build` and installed in a fresh virtual
environment; a script run from a folder that is not the repository imports
the package from that environment, talks to the offline model and runs a
tool. The tooling (`bookproof`) is not installed: it proves this
repository's files and runs from a checkout, through scripts/.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from system_components import require_executable

from bookproof.layout import REPO_ROOT

REPO = REPO_ROOT

OUTSIDE = """\
import importlib.util, sys
import sovereign_agent
from sovereign_agent.models import UserMessage, model_from_env

assert sovereign_agent.__file__.startswith(sys.prefix), sovereign_agent.__file__
assert importlib.util.find_spec("bookproof") is None
reply = model_from_env({}).complete([UserMessage(content="brief")])
print(reply.model, reply.message.content.splitlines()[0])
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = require_executable("uv", install="python3 -m pip install uv")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_holds_the_runtime_its_license_and_no_tooling(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith("sovereign_agent-")}
    assert packages == {"sovereign_agent"}
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert not any(name.endswith("entry_points.txt") for name in names)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    requires = [
        line.split(":", 1)[1].strip()
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    # Pydantic alone for everything but three extras: `skills` (chapter 7) adds PyYAML,
    # `mcp` (chapter 9) the official MCP SDK, `dbos` (chapter 12) DBOS, which only
    # scripts/dbos_worker.py imports.
    names = {
        requirement.split(">")[0].split("<")[0]: requirement.partition(";")[2].strip()
        for requirement in requires
    }
    assert names == {
        "pydantic": "",
        "pyyaml": "extra == 'skills'",
        "mcp": "extra == 'mcp'",
        "dbos": "extra == 'dbos'",
    }


@pytest.mark.slow
def test_the_installed_runtime_works_outside_a_checkout(wheel: Path, tmp_path: Path) -> None:
    uv = require_executable("uv", install="python3 -m pip install uv")
    venv = tmp_path / "venv"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(
        [uv, "venv", "--python", sys.executable, str(venv)],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "--python", str(python), str(wheel)],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = subprocess.run(
        [str(python), "-c", OUTSIDE],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("offline Good morning, Lucy.")
    assert not (venv / "bin" / "verify-book").exists()
