"""The Summary pane: a conversation's rolling summary and its versions."""
