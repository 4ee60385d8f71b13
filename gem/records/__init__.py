"""GEM's records: one trajectory schema for every episode GEM writes, env versions, replay and
regrade (see docs/records.md).

This package's ``__init__`` imports nothing, so that the registry can use
:mod:`gem.records.versions` without loading the rest.
"""
