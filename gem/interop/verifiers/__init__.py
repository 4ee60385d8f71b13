"""GEM and verifiers, both ways (see docs/interop.md).

- :mod:`gem.interop.verifiers.export`: ``gem export verifiers ID DIR``, a verifiers package.
- :mod:`gem.interop.verifiers.bridge`: a verifiers environment as a GEM env
  (``gem.make("verifiers:<taskset id or module>")``).
"""
