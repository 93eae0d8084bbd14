"""Shared widgets and models: no pane, no engine facade (plain engine models at most)."""
