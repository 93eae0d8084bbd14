"""The Memories pane: the browser, the editor, review and tidy-up, and the views they open."""
