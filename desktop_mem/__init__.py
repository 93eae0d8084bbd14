"""desktop_mem: chat with an LLM that remembers, memory as plain Markdown in git."""

__version__ = "0.1.0"
