"""chromadb's OpenTelemetry gRPC exporter is imported only if something builds one (issue #25).

chromadb imports it with itself (grpc and protobuf: ~24 MB in the window and in `serve`) and
builds one only when an OTel collector is configured, which this app never does. Each test runs
in a process of its own: what a process has imported is the thing measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, tmp_path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store")], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_an_engine_that_indexes_and_searches_never_imports_grpc(tmp_path: Path) -> None:
    code = """
import json, sys
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
engine = MemoryEngine.open(load_config(flags={"store.path": sys.argv[1], "watcher.enabled": False}))
engine.open_index()
engine.add("User keeps bees on the roof.", conversation_id="global")
hits = engine.search("who keeps bees?")
engine.close()
print(json.dumps({"found": any("bees" in h.memory.text for h in hits),
                  "chromadb": "chromadb" in sys.modules,
                  "loaded": sorted(m for m in ("grpc", "google.protobuf") if m in sys.modules)}))
"""
    result = _run(code, tmp_path)

    assert result == {"found": True, "chromadb": True, "loaded": []}


def test_building_chromas_span_exporter_builds_the_real_one(tmp_path: Path) -> None:
    """Whoever does configure an OTel collector gets OpenTelemetry's own exporter, as before."""
    code = """
import json, sys
import desktop_mem.engine.index.vector_index
from chromadb.telemetry import opentelemetry as chroma_otel
before = "grpc" in sys.modules
exporter = chroma_otel.OTLPSpanExporter(endpoint="http://127.0.0.1:9", insecure=True)
from opentelemetry.exporter.otlp.proto.grpc import trace_exporter
exporter.shutdown()
print(json.dumps({"before": before, "after": "grpc" in sys.modules,
                  "real": type(exporter) is trace_exporter.OTLPSpanExporter,
                  "module": type(sys.modules[trace_exporter.__name__]).__name__}))
"""
    result = _run(code, tmp_path)

    assert result == {"before": False, "after": True, "real": True, "module": "module"}
