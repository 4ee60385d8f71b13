"""GEM and OpenEnv, both ways (see docs/interop.md).

- :mod:`gem.interop.openenv.server`: GEM ids over OpenEnv's server protocol
  (``gem serve --protocol openenv``); needs the ``server`` extra, not openenv-core.
- :mod:`gem.interop.openenv.client`: any OpenEnv server as a GEM env (``gem.make("openenv:<url>")``).
- :mod:`gem.interop.openenv.export`: ``gem export openenv ID DIR``, an OpenEnv env package.
"""
