"""The former path of :mod:`gem.services.search` (the search servers); each module here is the
module of the same name there."""
