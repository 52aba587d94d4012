"""The application layer: one composition root and the use cases every front end calls.

`Workspace` (workspace.py) opens the history, the models, the embedder and the registries
from settings, once, and closes them once. The use cases, one module per subject
(conversations, sessions, facts, inspection, evaluation, indexing), take a workspace and
typed inputs and return typed outcomes; the CLI, the REPL, the MCP server and the HTTP
proxy only word those outcomes (chatmem.render).
"""

from chatmem.app.workspace import Workspace

__all__ = ["Workspace"]
