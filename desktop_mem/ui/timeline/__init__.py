"""The Timeline pane: every commit, its events, their diffs and lineage."""
