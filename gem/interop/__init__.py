"""GEM in other formats, and other formats in GEM (see docs/interop.md).

One module per format, each behind its own extra and imported only when used:

- :mod:`gem.interop.gymnasium`: every GEM id as a ``gymnasium.Env`` with text spaces
  (``gymnasium.make("gem/game.Wordle-v0-easy")``), and Gymnasium text envs as GEM envs
  (``gem.make("gymnasium:<id>")``).
- :mod:`gem.interop.openenv`: ``gem serve --protocol openenv`` (OpenEnv's server protocol),
  ``gem export openenv ID DIR`` (an OpenEnv env package) and ``gem.make("openenv:<url>")`` (any
  OpenEnv server as a GEM env).
- :mod:`gem.interop.verifiers`: ``gem export verifiers ID DIR`` (a verifiers environment package)
  and ``gem.make("verifiers:<module>")`` (a verifiers environment as a GEM env).

The ids ``openenv:``, ``verifiers:`` and ``gymnasium:`` are resolved by :mod:`gem.envs.registration`
without importing this package; the env classes here are loaded on ``gem.make``.
"""
