"""Git history and the timeline: commits, classification, paging, lineage, timeline actions."""
