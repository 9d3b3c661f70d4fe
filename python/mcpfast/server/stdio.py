"""The stdio engine's former home: `engines.stdio` (``mcpfast.cli`` imports it from here)."""

from .engines.stdio import serve_stdio as serve_stdio

__all__ = ["serve_stdio"]
