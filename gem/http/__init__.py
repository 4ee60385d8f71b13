"""GEM's HTTP wire: what a GEM server and its clients share, below every server that uses it.

- :mod:`gem.http.limits`: the connection guard every GEM server puts in front of its routes
  (``ServerLimits``, ``GuardMiddleware``, ``uvicorn_config``, tokens, loopback checks), used by
  ``gem serve``, the OpenEnv server, the retrieval and MCP servers and the episode viewer.
- :mod:`gem.http.protocol`: what client and server agree on (defaults, error kinds, JSON-safe
  values).
- :mod:`gem.http.client`: :class:`~gem.http.client.RemoteEnv`, a gem Env whose episodes run on a
  ``gem serve`` server (the remote vector backend's member).

Nothing here imports FastAPI or an env: the server app (:mod:`gem.server`) sits above this layer.
The former paths ``gem.server.limits``, ``gem.server.protocol`` and ``gem.server.client`` are
the same modules.
"""
