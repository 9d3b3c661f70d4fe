"""Servers for the interop suite: `mcpfast_full` (an mcpfast server with every feature, for peer
clients) and the peer servers `sdk_full` (the official SDK) and `fastmcp_full` (FastMCP), for the
mcpfast client; `harness` holds what the interop tests share. A peer server runs as its own
process: ``python <script> PORT`` (Streamable HTTP on 127.0.0.1:PORT/mcp) or ``<script> stdio``.
"""
