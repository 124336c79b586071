"""memoryd beside mcp-memory-service (the peer), on the same memories and the same MiniLM weights.

Run with ``python -m bench.peer``; see :mod:`bench.peer.run`.
"""
