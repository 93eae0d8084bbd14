"""Backends for AI tools that bring their own memory interface (Claude's memory tool)."""
