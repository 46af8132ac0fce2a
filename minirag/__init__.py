"""minirag: local-first hybrid retrieval over a folder of documents, served over MCP, a CLI and notebooks from one
DuckDB file (or a team lake)."""

__version__ = "0.1.0"
