"""The package's version, and nothing else: a leaf the faces (the CLI, the language server, the
MCP server) import, so none of them goes through the package's ``__init__`` for it. Kept equal
to pyproject.toml's ``version``."""

__version__ = "0.1.0"
