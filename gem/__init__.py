"""GEM, the General Experience Maker: a gym for agentic LLMs.

``gem.make(id)`` builds an env, ``gem.make_vec(ids)`` a vector of them, ``gem.print_envs()``
lists the ids. ``import gem`` stays light: an env's heavy dependencies load when it is made, and
``make_vec``, ``MultiAgentEnv`` and ``validate`` when first used.

With Gymnasium, every GEM id is also ``gymnasium.make("gem/<family>.<name>")``: ``import gem``
registers the ``gem/`` namespace in Gymnasium's registry as soon as Gymnasium is imported (at once
if it already is), without importing Gymnasium itself (see :mod:`gem.interop.gymnasium`).
"""

import sys

from gem.compat import aliases as _aliases

_aliases.install()  # former module paths (gem.utils.math_grader, gem.multiagent, ...) import from their new homes

from gem.core import Env, EnvWrapper  # noqa: E402
from gem.envs.registration import (  # noqa: E402
    EnvSpec,
    list_envs,
    make,
    print_envs,
    register,
    registry,
    spec,
)
from gem.version import __version__  # noqa: E402

import gem.envs  # noqa: E402,F401  (registers the built-in ids)

# name -> (module, attribute): loaded on first use, so that `import gem` stays light.
_LAZY = {
    "make_vec": ("gem.vector", "make_vec"),
    "MultiAgentEnv": ("gem.envs.multiagent.base", "MultiAgentEnv"),
    "validate": ("gem.checks", "validate"),
    "env_version": ("gem.envs.registration", "env_version"),
}
# Submodules that `import gem` used to import and no longer does: `gem.vector` still works after `import gem`.
_LAZY_SUBMODULES = ("vector", "params")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_SUBMODULES))


# ------------------------------------------------- when Gymnasium or logging arrive later
def _register_with_gymnasium() -> None:
    """Register every GEM id as ``gem/<family>.<name>`` in Gymnasium's registry (importing the bridge
    registers them). A Gymnasium the bridge cannot use is logged, never raised: it must not break
    ``import gymnasium``."""
    try:
        import gem.interop.gymnasium  # noqa: F401  (registers on import; later calls find it imported)
    except Exception as exc:  # an old or broken Gymnasium: say so, and leave `import gymnasium` working
        import logging

        logging.getLogger(__name__).warning(
            "GEM could not register its ids with Gymnasium (%s: %s); gymnasium.make('gem/...') will not "
            "find them.", type(exc).__name__, exc
        )


def _quiet_gem_logs() -> None:
    """GEM's loggers are silent unless the application configures logging (a library's NullHandler)."""
    import logging

    logger = logging.getLogger(__name__)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


class _CallAfterExec:
    """A module's own loader, and a callback to run once the module's code has run. It stands in for
    the loader during that one import only: the module's ``__loader__`` and spec get the real one back."""

    def __init__(self, loader, after) -> None:  # type: ignore[no-untyped-def]
        self.loader = loader
        self.after = after

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if getattr(module.__spec__, "loader", None) is self:
            module.__spec__.loader = self.loader
        self.after()

    def __getattr__(self, name: str):  # get_resource_reader, is_package, get_source...
        return getattr(self.loader, name)


class _PostImportHooks:
    """A ``sys.meta_path`` finder that runs a callback once a module has been imported, then forgets it.

    It finds nothing itself: it asks the finders after it for the module's spec and hands that spec
    back with its loader wrapped (:class:`_CallAfterExec`), so that the callback runs right after the
    module's code (so ``import gem`` need not import Gymnasium, nor logging, to act when they arrive).
    It removes itself once every callback has run.
    """

    def __init__(self, callbacks: dict) -> None:
        self.callbacks = dict(callbacks)

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        callback = self.callbacks.get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            found = find(name, path, target) if find is not None else None
            if found is not None:
                break
        else:
            return None  # not installed: the import fails as usual, and the hook keeps waiting
        if getattr(found.loader, "exec_module", None) is None:
            return None

        def after() -> None:
            self.forget(name)
            callback()

        found.loader = _CallAfterExec(found.loader, after)
        return found

    def forget(self, name: str) -> None:
        self.callbacks.pop(name, None)
        if not self.callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)


def _imported(name: str) -> bool:
    """Whether module ``name`` has been imported and has finished running."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _install_post_import_hooks() -> None:
    hooks = (("logging", _quiet_gem_logs), ("gymnasium", _register_with_gymnasium))
    # (a module still running its code, as Gymnasium 0.x is when its entry point imports GEM, is left to it)
    waiting = {name: callback for name, callback in hooks if name not in sys.modules}
    if waiting and not any(type(f).__name__ == "_PostImportHooks" for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImportHooks(waiting))  # first: the callbacks below may import them
    for name, callback in hooks:
        if _imported(name):
            callback()


_install_post_import_hooks()

__all__ = [
    "Env",
    "EnvSpec",
    "EnvWrapper",
    "MultiAgentEnv",
    "__version__",
    "list_envs",
    "make",
    "make_vec",
    "print_envs",
    "register",
    "registry",
    "spec",
    "validate",
]
