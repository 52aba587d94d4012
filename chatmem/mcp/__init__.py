"""chatmem's memory served over MCP (`chatmem mcp`): chatmem.mcp.server."""
