"""Chat and the write path: LLM client, prompts, context strategies, extraction, ingest."""
