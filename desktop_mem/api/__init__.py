"""The network front ends: the REST + OpenAI-compatible endpoint, the MCP server and its tools,
forwarding to the store's writer, the app's loopback endpoint, and the request guard."""
