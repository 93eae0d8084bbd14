"""The derived indexes and the read path: embedder, reranker, vector + keyword index, retrieval."""
