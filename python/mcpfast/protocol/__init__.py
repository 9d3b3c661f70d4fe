"""The sans-IO core: pure functions and data for MCP on the wire; no trio, no HTTP server."""
