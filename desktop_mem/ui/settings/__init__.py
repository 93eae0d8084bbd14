"""Settings and the dialogs that set up the endpoint and the AI tools."""
