"""Support the book does not print: the setups replay builds; a trace only names one.

A trace is a file anyone may hand you, so nothing in it chooses code. Its
`setup.factory` is a name looked up in `KNOWN_SETUPS`; each entry says which
function builds it, which keyword arguments a trace may give it, and which of
those name a folder the tools will read. A name not listed is refused: the
person replaying names other code themselves (`--setup module:function`, or a
function from Python).

A folder recorded in a setup is read only under a root the person replaying
gives (`--root DIR`); without one, a setup that reads files is refused, and a
folder that resolves outside the root (through `..`, an absolute path or a
link) is refused before anything in it is read. The recorded value may be
absolute, as the runtime writes it, or relative to the root.

A run that joined a remote server's tools (chapter 9) records the setup of
its local part only; each call to a remote tool records its source
(`mcp:supplier`). Replay builds the local part from the setup, and each
remote source from the shop's declarations today, by the source's name in
`KNOWN_REMOTE_SOURCES`: again a name looked up, never code the trace chose.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "KNOWN_REMOTE_SOURCES",
    "KNOWN_SETUPS",
    "KnownSetup",
    "ReplaySetupError",
    "confined_arguments",
    "known_setup",
    "remote_declarations",
]


class ReplaySetupError(Exception):
    """The tools of a recorded run cannot be built again: says why, and what to pass instead."""


_SHOP = frozenset({"shop", "prices", "allowed", "hints"})


@dataclass(frozen=True)
class KnownSetup:
    """One factory replay may call on a trace's word, and what the trace may tell it."""

    module: str
    function: str
    arguments: frozenset[str]
    folders: frozenset[str] = frozenset()

    def factory(self) -> Callable[..., Any]:
        # Imported when first needed: the module and the name are this
        # runtime's constants, never text from the trace. The skills module
        # needs an optional extra, and says which when it is missing.
        try:
            module = importlib.import_module(self.module)
        except ImportError as error:
            raise ReplaySetupError(f"cannot build the setup: {error}") from None
        built: Callable[..., Any] = getattr(module, self.function)
        return built


# Every factory in the runtime that records a setup, under the name it records.
KNOWN_SETUPS: Mapping[str, KnownSetup] = MappingProxyType(
    {
        "sovereign_agent.shop:build_tools": KnownSetup(
            "sovereign_agent.shop", "build_tools", _SHOP
        ),
        "sovereign_agent.evaluate.variants:variant_tools": KnownSetup(
            "sovereign_agent.evaluate.variants",
            "variant_tools",
            frozenset({"shop", "prices", "descriptions", "hints"}),
        ),
        "sovereign_agent.documents:build_document_tools": KnownSetup(
            "sovereign_agent.documents",
            "build_document_tools",
            _SHOP | {"documents_root"},
            folders=frozenset({"documents_root"}),
        ),
        "sovereign_agent.skills:build_skill_tools": KnownSetup(
            "sovereign_agent.skills",
            "build_skill_tools",
            # `provenance` is a claim about the folder ("shop" or "outside"),
            # checked by the factory itself; what the replayed tools can touch
            # is still only in-memory shop rows and files under --root.
            _SHOP | {"skills_root", "provenance"},
            folders=frozenset({"skills_root"}),
        ),
    }
)


def known_setup(name: str) -> KnownSetup:
    """The known setup a trace names, or a ReplaySetupError saying what to do instead."""
    known = KNOWN_SETUPS.get(name)
    if known is None:
        raise ReplaySetupError(
            f"the trace names the setup {name}, which replay does not know; a trace never "
            f"chooses the code that runs: name a function that builds the same tools with "
            f"--setup module:function"
        )
    return known


def _inside(root: Path, name: str, recorded: Any) -> str:
    if not isinstance(recorded, str) or not recorded or "\0" in recorded:
        raise ReplaySetupError(f"the setup's {name} is not a folder name")
    # realpath follows every link and `..` first, so what is compared is the
    # folder that would be read, not the text that names it.
    folder = Path(os.path.realpath(root / recorded))
    if not folder.is_relative_to(root):
        shown = recorded if len(recorded) <= 160 else recorded[:157] + "..."
        raise ReplaySetupError(
            f"the setup's {name} {shown} lies outside --root: refused, nothing read"
        )
    return str(folder)


def confined_arguments(
    name: str, known: KnownSetup, arguments: Mapping[str, Any], root: Path | None
) -> dict[str, Any]:
    """The recorded arguments of a known setup, checked, with every folder resolved under `root`.

    Raises ReplaySetupError for an argument the setup does not take, for a
    folder with no root given, and for a folder outside the root; all before
    the factory is called, so nothing has been read.
    """
    unknown = sorted(set(arguments) - known.arguments)
    if unknown:
        raise ReplaySetupError(f"the setup {name} takes no argument {unknown[0]!r}")
    folders = sorted(known.folders & set(arguments))
    if not folders:
        return dict(arguments)
    if root is None:
        raise ReplaySetupError(
            f"the setup {name} reads files ({', '.join(folders)}); replay reads them only "
            f"under a folder you name: --root DIR"
        )
    base = Path(os.path.realpath(root))
    if not base.is_dir():
        raise ReplaySetupError(f"--root {root} is not a folder")
    return {
        **arguments,
        **{folder: _inside(base, folder, arguments[folder]) for folder in folders},
    }


# Each remote source a trace may name, and where the shop declares its tools:
# (module, attribute), this runtime's constants.
KNOWN_REMOTE_SOURCES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {"mcp:supplier": ("sovereign_agent.mcp.supplier", "SUPPLIER_DECLARATIONS")}
)


def remote_declarations(source: str) -> tuple[Any, ...]:
    """Today's declarations (`mcp.remote.Declared`) of a remote source a trace names."""
    known = KNOWN_REMOTE_SOURCES.get(source)
    if known is None:
        shown = source if len(source) <= 60 else source[:57] + "..."
        raise ReplaySetupError(
            f"the trace's calls went to the remote source {shown!r}, whose declarations "
            f"replay does not know; name a function that builds the same tools with "
            f"--setup module:function"
        )
    try:
        module = importlib.import_module(known[0])
    except ImportError as error:
        raise ReplaySetupError(f"cannot build the remote tools: {error}") from None
    declarations: tuple[Any, ...] = tuple(getattr(module, known[1]))
    return declarations
