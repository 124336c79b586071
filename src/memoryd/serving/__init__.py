"""The servers memoryd runs, composed from its faces: the one place that puts faces together.

A face (``api``, ``mcp``, ``cli``, ``dashboard``) imports no other face. Where one process
serves several, this package composes them:

* :mod:`memoryd.serving.http`: the HTTP app, the REST app of :mod:`memoryd.api` with MCP's
  Streamable HTTP at ``/mcp`` (:mod:`memoryd.mcp.server`) and the dashboard
  (:mod:`memoryd.dashboard`) beside it, one engine for all;
* :mod:`memoryd.serving.listening`: ``memoryd serve``'s way of starting it: the host
  policy checked first, the port listened on at once with :mod:`memoryd.serving.starting`'s
  app while the real one is built;
* :mod:`memoryd.serving.stdio`: MCP over stdio (``memoryd mcp``).

The CLI's ``serve`` and ``mcp`` commands call it; nothing else in memoryd imports it. This
module imports nothing, so starting MCP over stdio loads neither FastAPI nor the dashboard.
"""
