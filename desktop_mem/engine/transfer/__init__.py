"""Moving memory in and out: imports, exports, git sync."""
