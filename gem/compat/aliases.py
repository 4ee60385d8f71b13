"""Former module paths, kept importable by one table: :data:`ALIASES` (old path -> new path).

Modules that moved, and the original GEM's module paths for code that now lives elsewhere, have no
file at their old path. ``import gem`` puts :class:`AliasFinder` first on ``sys.meta_path``; it
answers an import of an old path with the module at the new path itself (``import gem.utils.qa_em``
*is* :mod:`gem.grading.qa`, the same object), so ``isinstance``, monkeypatching and module state
behave as at the new path. A submodule of an aliased package is the same submodule of its new
package (``gem.tools.search_engine.corpus`` is ``gem.services.search.corpus``).

``python -m OLD.PATH`` runs the new module's code as ``__main__``, as ``python -m NEW.PATH`` does.

To move a module: move the file, and add one row here.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Optional, Sequence

ALIASES: dict[str, str] = {
    # --- the original GEM's paths (gem-llm 0.1.0 and its main branch)
    "gem.__about__": "gem.version",
    "gem.utils.debug": "gem.compat.debug",
    "gem.utils.math_grader": "gem.compat.math_grader",
    "gem.utils.qa_em": "gem.grading.qa",
    "gem.utils.sandbox": "gem.compat.sandbox",
    "gem.multiagent": "gem.compat.multiagent",
    "gem.multiagent.multi_agent_env": "gem.compat.multiagent",
    "gem.envs.multiagent.multi_agent_env": "gem.compat.multiagent",
    "gem.vector.async_vector_env": "gem.vector.thread_vector_env",
    "gem.tools.search_engine": "gem.services.search",  # and each of its modules
    "gem.tools.mcp_server": "gem.services.mcp",  # and each of its modules
    # --- this project's former paths
    "gem.envs._math_qa_base": "gem.envs.single_turn",
    "gem.envs.multiagent.checker": "gem.checks.multiagent_checker",
    "gem.utils.env_checker": "gem.checks.env_checker",
    "gem.utils.math_answers": "gem.grading.math_answers",
    "gem.utils.math_grading_pool": "gem.grading.math_pool",
    "gem.utils.math_grader_compat": "gem.compat.math_grader",
    "gem.utils._math_grader_worker": "gem.grading._math_worker",
    "gem.utils._sandbox_zygote": "gem.sandbox._zygote",
    "gem.tools._shell_runtime": "gem.sandbox._shell_runtime",
    "gem.server.limits": "gem.http.limits",
    "gem.server.protocol": "gem.http.protocol",
    "gem.server.client": "gem.http.client",
}


def new_path(name: str) -> Optional[str]:
    """Where module ``name`` lives now, or ``None`` when it is not a former path."""
    if name in ALIASES:
        return ALIASES[name]
    head = name.rpartition(".")[0]
    while head:
        if head in ALIASES:  # a submodule of an aliased package
            return ALIASES[head] + name[len(head):]
        head = head.rpartition(".")[0]
    return None


class _AliasLoader:
    """Loads a former path as the module at its new path (the same object)."""

    def __init__(self, target: str, spec: importlib.machinery.ModuleSpec) -> None:
        self.target = target
        self.spec = spec  # the new module's own spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the alias's spec on the module; it keeps its own.
        module.__spec__ = self.spec

    def get_code(self, fullname: str):  # type: ignore[no-untyped-def]
        """The new module's code (``python -m`` with a former path runs it as ``__main__``)."""
        return self.spec.loader.get_code(self.target)  # type: ignore[union-attr]

    def is_package(self, fullname: str) -> bool:
        return self.spec.submodule_search_locations is not None


class AliasFinder:
    """The ``sys.meta_path`` finder for :data:`ALIASES`."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        new = new_path(fullname)
        if new is None:
            return None
        loaded = sys.modules.get(new)
        real = getattr(loaded, "__spec__", None) if loaded is not None else importlib.util.find_spec(new)
        if real is None:
            return None  # nothing at the new path either: the import fails as usual
        spec = importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(new, real), origin=real.origin,
            is_package=real.submodule_search_locations is not None,
        )
        if real.submodule_search_locations is not None:
            spec.submodule_search_locations = list(real.submodule_search_locations)
        spec.has_location = real.has_location
        return spec


def install() -> None:
    """Put :class:`AliasFinder` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
