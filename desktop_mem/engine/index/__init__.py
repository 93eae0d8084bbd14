"""The derived indexes and the read path: embedder, reranker, vector + keyword index, retrieval."""

from desktop_mem.engine.index.chroma_telemetry import defer_span_exporter

# Before any module of this package imports chromadb (see chroma_telemetry).
defer_span_exporter()
