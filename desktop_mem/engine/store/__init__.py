"""The Markdown store: files, front matter, catalog, lock, ids, secrets, the write transaction."""
