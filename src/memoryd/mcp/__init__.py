"""The MCP face: the registry's tool operations as MCP tools (stdio and Streamable HTTP)."""
