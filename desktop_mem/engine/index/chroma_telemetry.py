"""chromadb without the OpenTelemetry gRPC exporter it imports but this app never uses.

chromadb 1.5's telemetry module imports OpenTelemetry's OTLP gRPC span exporter when chromadb is
imported (grpc, protobuf and the exporter: ~24 MB of RSS in every process that opens the index,
the window and `serve` among them, issue #25), and constructs one only when
`chroma_otel_collection_endpoint` is set, which this app never sets: nothing may send data
anywhere but the user's LLM endpoint. So until something constructs one, that module is a stand-in
whose `OTLPSpanExporter` imports the real module and builds the real exporter: nothing changes
for a caller that does. `tests/test_chroma_telemetry.py` pins both halves against the locked
chromadb.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Any

EXPORTER_MODULE = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
_lock = threading.Lock()


class _DeferredExporterModule(types.ModuleType):
    """Stands in for EXPORTER_MODULE until its exporter is first constructed."""


def _real_module() -> types.ModuleType:
    """The real exporter module, imported now in place of the stand-in."""
    with _lock:
        module = sys.modules.get(EXPORTER_MODULE)
        if isinstance(module, _DeferredExporterModule):
            del sys.modules[EXPORTER_MODULE]
        return importlib.import_module(EXPORTER_MODULE)


class DeferredSpanExporter:
    """Constructs the real OTLPSpanExporter (importing grpc then, not with chromadb)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real_module().OTLPSpanExporter(*args, **kwargs)


def defer_span_exporter() -> bool:
    """Put the stand-in in place unless the exporter's module is imported already (then there is
    nothing to save). True when the stand-in is in place."""
    with _lock:
        module = sys.modules.get(EXPORTER_MODULE)
        if module is not None:
            return isinstance(module, _DeferredExporterModule)
        stand_in = _DeferredExporterModule(EXPORTER_MODULE, __doc__)
        stand_in.OTLPSpanExporter = DeferredSpanExporter  # type: ignore[attr-defined]
        sys.modules[EXPORTER_MODULE] = stand_in
        return True
