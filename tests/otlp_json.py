"""Reading our OTLP JSON exports back through the official schema (`opentelemetry-proto`).

Shared by the export tests and the remote-source tests: an export is only
checked once it parses as an `ExportTraceServiceRequest`, ids converted from
OTLP JSON's hex to the base64 protobuf's JSON mapping expects.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def parse_otlp(document: dict[str, Any]) -> ExportTraceServiceRequest:
    """The export through the official schema, after checking and converting its hex ids."""
    converted = copy.deepcopy(document)
    for resource in converted["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                    text = span[key]
                    if key == "parentSpanId" and text == "":
                        continue
                    assert len(text) == 2 * size and text == text.lower()
                    raw = bytes.fromhex(text)
                    assert any(raw), f"{key} is all zeros"
                    span[key] = base64.b64encode(raw).decode("ascii")
    return json_format.Parse(json.dumps(converted), ExportTraceServiceRequest())


def spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    return [
        span
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def attributes(span: Span) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in span.attributes:
        kind = pair.value.WhichOneof("value")
        value = getattr(pair.value, kind)
        if kind == "array_value":
            value = [item.string_value for item in value.values]
        found[pair.key] = value
    return found
