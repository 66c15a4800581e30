"""Support the book does not print: tools from several sources joined into one dispatcher.

Until chapter 8 a run's tools come from one place, a `build_*_tools` function
of the shop, and chapter 2's `Dispatcher` takes them as one list. Chapter 9
adds tools a remote server offers, beside the shop's and a skill loader's. The
`Dispatcher` the chapters print stays as it is: a `Toolset` is anything that
names where its tools come from (`source`) and holds them by name (`tools`),
and `join_toolsets` makes one list of them for a `Dispatcher`, with one
allowlist over every source and chapter 2's order of checks unchanged.

Joining refuses two tools under one name, whichever sources they come from,
with an error that names both sources: which of two tools a call reaches must
never depend on the order the sources were listed in. The joined tools keep
each tool's source, for the record of what ran.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from sovereign_agent.tools import Dispatcher, ExecutableTool, Setup, ToolCall

__all__ = ["JoinedTools", "SourcedTools", "Toolset", "combined_dispatcher", "join_toolsets"]

# Chapter 2's default, read off the class the chapters print, so it is said once.
_DEFAULT_MAX_RESULT_BYTES: int = (
    inspect.signature(Dispatcher).parameters["max_result_bytes"].default
)


@runtime_checkable
class Toolset(Protocol):
    """Tools from one source: the shop's, a remote server's, a skill loader's.

    `source` is a short label for the record ("shop", "mcp:supplier");
    `tools` maps each tool's name to the tool. A `Dispatcher`'s own `tools`
    has that shape, so `SourcedTools("shop", build_tools(SHOP).tools)` is the
    shop's toolset.
    """

    @property
    def source(self) -> str: ...

    @property
    def tools(self) -> Mapping[str, ExecutableTool[Any]]: ...


@dataclass(frozen=True)
class SourcedTools:
    """The plainest `Toolset`: a label and the tools, as they are."""

    source: str
    tools: Mapping[str, ExecutableTool[Any]]

    @classmethod
    def of(cls, source: str, tools: Iterable[ExecutableTool[Any]]) -> SourcedTools:
        """A toolset from a list of tools; two under one name are refused here already."""
        by_name: dict[str, ExecutableTool[Any]] = {}
        for tool in tools:
            if tool.name in by_name:
                raise ValueError(f"duplicate tool name {tool.name!r} within source {source!r}")
            by_name[tool.name] = tool
        return cls(source, MappingProxyType(by_name))


@dataclass(frozen=True)
class JoinedTools:
    """Every tool of several toolsets, in the order given, and the source each came from."""

    tools: tuple[ExecutableTool[Any], ...]
    sources: Mapping[str, str]

    def source_of(self, name: str) -> str | None:
        """Which toolset offered the tool called `name`; None for a name none offered."""
        return self.sources.get(name)


def join_toolsets(toolsets: Iterable[Toolset]) -> JoinedTools:
    """One list of tools for a `Dispatcher`; a name offered twice is refused, naming both."""
    tools: list[ExecutableTool[Any]] = []
    sources: dict[str, str] = {}
    labels: set[str] = set()
    for toolset in toolsets:
        source = toolset.source
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"a toolset's source must be a non-empty label, not {source!r}")
        if source in labels:
            # Two toolsets under one label would make the record's "source"
            # of a tool say nothing about where it really came from.
            raise ValueError(f"two toolsets share the source label {source!r}")
        labels.add(source)
        for name, tool in toolset.tools.items():
            if name != tool.name:
                # The model is shown `tool.name`; a key that differs would
                # register, and allow, a name nobody is shown.
                raise ValueError(
                    f"source {source!r} lists tool {tool.name!r} under the name {name!r}"
                )
            if name in sources:
                raise ValueError(
                    f"tool name {name!r} is offered by both {sources[name]!r} and {source!r}"
                )
            sources[name] = source
            tools.append(tool)
    return JoinedTools(tuple(tools), MappingProxyType(sources))


def combined_dispatcher(
    toolsets: Iterable[Toolset],
    *,
    allowed: Iterable[str],
    before_write: Callable[[ToolCall], None] | None = None,
    max_result_bytes: int = _DEFAULT_MAX_RESULT_BYTES,
    hints: bool = False,
    setup: Setup | None = None,
) -> tuple[Dispatcher, JoinedTools]:
    """Chapter 2's `Dispatcher` over the joined tools, with one allowlist across every source.

    Nothing about a call's checks changes: the dispatcher is the one the
    chapters print, given the joined list. The joined tools come back with it,
    so the caller can say which source a call went to.
    """
    joined = join_toolsets(toolsets)
    dispatcher = Dispatcher(
        joined.tools,
        allowed=allowed,
        before_write=before_write,
        max_result_bytes=max_result_bytes,
        hints=hints,
        setup=setup,
    )
    return dispatcher, joined
