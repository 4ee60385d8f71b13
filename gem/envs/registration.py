"""The env registry: ``EnvSpec``, ``register``, ``make`` and ``print_envs`` (``make_vec`` is in
:mod:`gem.vector`).

An :class:`EnvSpec` is the single truth about an id: where its class lives, its default kwargs,
its family and a one-line description. ``make`` merges kwargs over the defaults and imports the
env's module only then, so ``import gem`` stays light.

Ids come from three places: the built-in table (``gem/envs/__init__.py``), third-party packages
through the ``gem.envs`` entry-point group (loaded on first need, without importing the plugin
first), and namespaces whose ids are only known once a library is imported (``rg:``), which are
resolved on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import numbers
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable, Optional, Union

from gem.compat.kwargs import ORIGINAL_ENV_KWARGS, ORIGINAL_KWARG_NAMES, note_ignored_kwargs  # noqa: F401
from gem.core import REWARD_LEVELS, Env
from gem.errors import DependencyNotInstalled, UnknownEnvError, install_hint, missing_extra

# difflib, inspect, logging and gem.params load when a message or a signature needs them, so that
# `import gem` and `gem list` stay light.

EntryPoint = Union[str, Callable[..., Env]]

FAMILIES: dict[str, str] = {
    "game": "multi-turn language games",
    "math": "math problems graded with math-verify",
    "code": "programming problems run against tests in the sandbox",
    "qa": "question answering, with or without search",
    "logic": "rule reasoning",
    "rg": "ReasoningGym tasks",
    "eval": "held-out evaluation sets",
    "multi": "multi-agent games",
    "webshop": "shopping in a bundled web shop",
    "terminal": "shell tasks in a sandbox",
    "swe": "fixing issues in small Python repositories",
}


@dataclass
class EnvSpec:
    """Everything needed to build an env from its id.

    Attributes:
        id: the registered id, ``family:Name`` by convention (``game:Wordle-v0-easy``).
        entry_point: ``"module:Class"`` (imported on ``make``) or a callable returning an Env.
        kwargs: default constructor arguments; ``make(id, **overrides)`` merges over them.
        family: the part of the id before ``:`` unless given.
        description: one line for ``print_envs``.
        extra: the pip extra that the env's dependencies come with (``math``: ``pip install -e ".[math]"`` in the GEM checkout), if any.
    """

    id: str
    entry_point: EntryPoint
    kwargs: dict[str, Any] = field(default_factory=dict)
    family: str = ""
    description: str = ""
    extra: Optional[str] = None

    def __post_init__(self) -> None:
        if not self.family:
            self.family = self.id.split(":", 1)[0] if ":" in self.id else "other"

    def load(self) -> Callable[..., Env]:
        """The env class (or factory), importing its module now."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if module_name.split(".")[0] == "gem" and _missing_third_party(exc):
                if self.extra:
                    raise missing_extra(self.id, self.extra, exc.name) from exc
                raise DependencyNotInstalled(f"{self.id} needs {exc.name}, which is not installed.") from exc
            raise ImportError(
                f"{self.id}: its module {module_name!r} failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            return getattr(module, attr)
        except AttributeError as exc:
            raise ImportError(f"{self.id}: module {module_name!r} has no {attr!r}.") from exc

    def make(self, seed: Optional[int] = None, **kwargs: Any) -> Env:
        """Build the env: ``gem.make(self.id, seed=seed, **kwargs)``."""
        return _make_from_spec(self, kwargs, seed)


def _missing_third_party(exc: ImportError) -> bool:
    """Whether ``exc`` says that a package outside gem is not installed."""
    missing = getattr(exc, "name", None) or ""
    return isinstance(exc, ModuleNotFoundError) and bool(missing) and missing.split(".")[0] != "gem"


class _Registry(dict):
    """``{id: EnvSpec}``; asking for every id (iterating, ``len``, ``keys``...) also lists the
    namespaces' ids (``rg:``), loading their library then, never at ``import gem``."""

    def _complete(self) -> None:
        for prefix, (resolve, list_ids) in list(_namespaces.items()):
            if prefix in _listed_namespaces:
                continue
            _listed_namespaces.add(prefix)
            for env_id in list_ids():
                if env_id not in self:
                    found = resolve(env_id)
                    if found is not None:
                        dict.__setitem__(self, env_id, found)

    def __iter__(self):  # type: ignore[override]
        self._complete()
        return super().__iter__()

    def __len__(self) -> int:
        self._complete()
        return super().__len__()

    def __contains__(self, env_id: object) -> bool:
        if dict.__contains__(self, env_id):
            return True
        return isinstance(env_id, str) and _resolve_namespace(env_id) is not None

    def __getitem__(self, env_id: str) -> EnvSpec:
        if not dict.__contains__(self, env_id) and isinstance(env_id, str):
            _resolve_namespace(env_id)
        return super().__getitem__(env_id)

    def get(self, env_id: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[env_id] if env_id in self else default

    def keys(self):  # type: ignore[override]
        self._complete()
        return super().keys()

    def values(self):  # type: ignore[override]
        self._complete()
        return super().values()

    def items(self):  # type: ignore[override]
        self._complete()
        return super().items()

    def copy(self) -> dict[str, EnvSpec]:  # type: ignore[override]
        self._complete()
        return dict(super().items())


registry: dict[str, EnvSpec] = _Registry()
ENV_REGISTRY = registry  # the original GEM's name for the same dict

# prefix -> (resolve(full id) -> EnvSpec or None, list_ids() -> ids). See register_namespace.
_namespaces: dict[str, tuple[Callable[[str], Optional[EnvSpec]], Callable[[], Iterable[str]]]] = {}
_listed_namespaces: set[str] = set()
_family_notes: dict[str, Callable[[], Optional[str]]] = {}  # family -> note() (see register_namespace)
_plugins_loaded = False


def _resolve_namespace(env_id: str) -> Optional[EnvSpec]:
    """The spec of a namespace id (stored in the registry), or ``None``."""
    for prefix, (resolve, _) in _namespaces.items():
        if env_id.startswith(prefix):
            found = resolve(env_id)
            if found is not None:
                dict.__setitem__(registry, env_id, found)
                return found
    return None


def register(
    env_id: str,
    entry_point: EntryPoint,
    *,
    description: str = "",
    family: str = "",
    extra: Optional[str] = None,
    override: bool = False,
    **kwargs: Any,
) -> EnvSpec:
    """Register ``env_id``; ``kwargs`` become the env's default constructor arguments.

    Raises ``ValueError`` if the id exists (pass ``override=True`` to replace it).
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"An env id is a non-empty string, got {env_id!r}.")
    if env_id in registry and not override:
        raise ValueError(f"Env id {env_id!r} is already registered; pass override=True to replace it.")
    spec = EnvSpec(env_id, entry_point, dict(kwargs), family, description, extra)
    registry[env_id] = spec
    return spec


def register_namespace(
    prefix: str,
    resolve: Callable[[str], Optional[EnvSpec]],
    list_ids: Callable[[], Iterable[str]],
    note: Optional[Callable[[], Optional[str]]] = None,
) -> None:
    """Serve ids that start with ``prefix`` from ``resolve`` on first use.

    For families whose ids are only known after importing a heavy library (``rg:`` asks
    reasoning-gym), so that ``import gem`` does not import it. ``resolve(id)`` returns an
    :class:`EnvSpec` or ``None``; ``list_ids()`` lists every id, for ``print_envs`` and tests
    (keep it cheap: ``gem list`` calls it). ``note()``, if given, returns a line that ``print_envs``
    shows under the family (what to install when its library is missing), or ``None``.
    """
    _namespaces[prefix] = (resolve, list_ids)
    if note is not None:
        _family_notes[prefix.rstrip(":")] = note
    _listed_namespaces.discard(prefix)


def load_plugins() -> None:
    """Import the third-party envs advertised in the ``gem.envs`` entry-point group (once).

    Each entry point is a module (importing it registers its envs) or a callable to call. A plugin
    that fails is logged and skipped; the rest still load.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="gem.envs"):
        try:
            loaded = ep.load()
            if callable(loaded):
                loaded()
        except Exception:  # a broken plugin must not break gem
            import logging

            logging.getLogger(__name__).exception("Could not load the gem.envs plugin %r", ep.name)


def spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of ``env_id``; an unknown id raises :class:`UnknownEnvError`."""
    found = dict.get(registry, env_id) if isinstance(env_id, str) else None
    if found is not None:
        return found
    found = _resolve_namespace(env_id) if isinstance(env_id, str) else None
    if found is not None:
        return found
    if not _plugins_loaded:
        load_plugins()
        return spec(env_id)
    raise UnknownEnvError(_unknown_message(env_id))


def _unknown_message(env_id: object) -> str:
    import difflib

    ids = list(dict.keys(registry))
    close = difflib.get_close_matches(str(env_id), ids, n=5, cutoff=0.6)
    msg = f"Unknown env id {env_id!r}."
    if close:
        msg += " Did you mean " + ", ".join(repr(c) for c in close) + "?"
    else:
        families = sorted({s.family for s in dict.values(registry)})
        msg += f" Ids look like 'family:Name'; families: {', '.join(families)}."
    return msg + " Run `gem list` (or gem.print_envs()) to see every id."


def list_envs(family: Optional[str] = None) -> list[str]:
    """Every registered id (plugins and namespaces included), optionally of one family."""
    load_plugins()
    prefixes = tuple(_namespaces)
    ids = dict.fromkeys(i for i in dict.keys(registry) if not i.startswith(prefixes))
    for _, list_ids in _namespaces.values():  # each namespace in its own order, wherever resolved ones sit
        ids.update(dict.fromkeys(list_ids()))
    if family is None:
        return list(ids)
    valid = sorted({i.split(":", 1)[0] for i in ids})
    if family not in valid:
        raise ValueError(f"Unknown family {family!r}; choose one of: {', '.join(valid)}.")
    return [i for i in ids if i.split(":", 1)[0] == family]


def version_manifest(env_id: str) -> dict[str, Any]:
    """What the version of ``env_id`` hashes: ``{"version", "entry_point", "kwargs", "files":
    {path: sha256}, "libraries": {module: version}}`` (see :mod:`gem.records.versions`)."""
    from gem.records.versions import manifest_of_spec

    if not isinstance(env_id, str):
        raise UnknownEnvError(_unknown_message(env_id))
    env_spec = interop_spec(env_id) or spec(env_id)
    return manifest_of_spec(env_spec, EXTRA_MODULES.get(env_spec.extra or "", ()))


def env_version(env_id: str) -> str:
    """The version of ``env_id``: a content hash of its code, data files, default kwargs and its
    extra's libraries (12 hex characters; see :mod:`gem.records.versions` for what counts).
    Computed on first use, then cached."""
    return version_manifest(env_id)["version"]


def _check_version(env_id: str, version: Any) -> None:
    if not isinstance(version, str) or not version:
        raise ValueError(f"version must be a version string from `gem list --versions`, got {version!r}.")
    current = env_version(env_id)
    if version != current:
        raise ValueError(
            f"{env_id} is at version {current}, not {version}: its code, data or default kwargs changed "
            f"since that version was recorded. Use version={current!r} (or no version) to run today's env, "
            f"or install the GEM release that recorded {version} to reproduce it exactly; "
            "`gem replay RUN_DIR` shows whether the episodes still play the same."
        )


def make(env_id: str, *, seed: Optional[int] = None, version: Optional[str] = None, **kwargs: Any) -> Env:
    """Build the env registered as ``env_id``; ``kwargs`` override the spec's defaults.

    ``seed``: seeds the env's generators, so a later ``reset()`` without a seed is reproducible
    (``make(id, seed=s)`` then ``reset()`` gives the same episode every time). An env whose
    constructor takes a parameter named ``seed`` (declared in its signature, not through
    ``**kwargs``) also gets it there, as the original GEM's ``make`` passed it: that is how an env
    says it needs its seed at construction (reasoning-gym's item set, RuleTaker's items). The seed
    is not one of the spec's kwargs: ``env.spawn()`` builds with the spec's own.

    ``version`` (from ``gem list --versions`` or a record's ``env_version``): refuse to build the env
    unless its current version is that one (``ValueError`` naming the current version).

    Unknown ids raise :class:`UnknownEnvError` (a ``KeyError`` and a ``ValueError``) naming the
    closest ids. A kwarg of :data:`gem.compat.kwargs.ORIGINAL_ENV_KWARGS` that this env does not use
    is ignored (logged once); any other unknown kwarg raises ``ValueError`` naming the accepted ones
    and the closest match.
    """
    if not isinstance(env_id, str):
        raise UnknownEnvError(_unknown_message(env_id))
    outside = interop_spec(env_id)  # openenv:/verifiers:/gymnasium: ids (see interop_spec)
    env_spec = outside or spec(env_id)
    if version is not None:
        _check_version(env_id, version)
    return _make_from_spec(env_spec, kwargs, seed)


def _check_seed(seed: Any) -> Optional[int]:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"seed must be an integer or None, got {seed!r}.")
    return int(seed)


def _own_containers(value: Any) -> Any:
    """``value`` with its plain containers (dict, list, set, tuple) copied, recursively; any other
    object (a dataset, a callable) is shared as it is. A spec's defaults hold nested configs (an
    ``rg:`` preset's ``config``): each env gets its own, so one env mutating its kwargs cannot
    change the spec or the envs made after it."""
    kind = type(value)
    if kind is dict:
        return {k: _own_containers(v) for k, v in value.items()}
    if kind in (list, tuple):
        return kind(_own_containers(v) for v in value)
    if kind is set:
        return set(value)
    return value


def _make_from_spec(env_spec: EnvSpec, kwargs: dict[str, Any], seed: Optional[int] = None) -> Env:
    seed = _check_seed(seed)
    merged = {**_own_containers(env_spec.kwargs), **kwargs}
    factory = env_spec.load()
    # Reward levels are every env's kwargs: set on the instance after construction (and also passed
    # to a constructor that names them).
    levels = {k: merged[k] for k in REWARD_LEVELS if k in merged}
    try:
        named = _accepted_kwargs(factory) or ()
    except TypeError:
        named = ()
    merged = {k: v for k, v in merged.items() if k not in levels or k in named}
    merged = _check_kwargs(env_spec, factory, merged)
    # a constructor that names ``seed`` gets make's seed (see make)
    call_kwargs = {**merged, "seed": seed} if seed is not None and "seed" in named else merged
    try:
        env = factory(**call_kwargs)
    except TypeError as exc:
        _raise_for_bad_kwargs(env_spec, factory, call_kwargs, exc)
        raise
    if not isinstance(env, Env):
        raise TypeError(f"{env_spec.id}: entry point returned {type(env).__name__}, not a gem.Env.")
    if levels:
        env.set_reward_levels(**levels)
    env.spec = dataclasses.replace(env_spec, kwargs={**merged, **levels})
    if seed is not None:
        env._set_default_seed(seed)
    return env


@functools.lru_cache(maxsize=None)
def _accepted_kwargs(factory: Callable[..., Env]) -> Optional[tuple[str, ...]]:
    """The keyword arguments ``factory`` takes; ``None`` if it takes any (``**kwargs``) or cannot tell."""
    import inspect

    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return tuple(n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _check_kwargs(env_spec: EnvSpec, factory: Callable[..., Env], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` without the ``ORIGINAL_KWARG_NAMES`` that ``factory`` does not take (logged once);
    ``ValueError`` with a suggestion for any other name it does not take."""
    try:
        accepted = _accepted_kwargs(factory)
    except TypeError:  # an unhashable callable: let the call itself report
        return kwargs
    if accepted is None:
        return kwargs
    unknown = [k for k in kwargs if k not in accepted]
    if not unknown:
        return kwargs
    wrong = [k for k in unknown if k not in ORIGINAL_KWARG_NAMES]
    if wrong:
        import difflib

        from gem.params import declared_params

        declared = {p.name: p for p in declared_params(factory) or ()}
        hints, takes = [], []
        for name in wrong:
            close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            if close and close[0] in declared:  # the declaration says what the suggestion takes
                takes.append(f" {close[0]} takes {declared[close[0]].describe()}.")
        raise ValueError(
            f"{env_spec.id} got unknown argument(s) {', '.join(hints)}; "
            f"it accepts: {', '.join(accepted) or 'nothing'}." + "".join(dict.fromkeys(takes))
        )
    note_ignored_kwargs(env_spec.id, factory, unknown)
    return {k: v for k, v in kwargs.items() if k in accepted}


def _raise_for_bad_kwargs(
    env_spec: EnvSpec, factory: Callable[..., Env], kwargs: dict[str, Any], exc: TypeError
) -> None:
    """Turn "unexpected keyword argument" into a ValueError that lists the accepted ones."""
    try:
        accepted = _accepted_kwargs(factory)
    except TypeError:
        return
    if accepted is None:
        return
    unknown = [k for k in kwargs if k not in accepted]
    if unknown:
        raise ValueError(
            f"{env_spec.id} got unknown argument(s) {', '.join(map(repr, unknown))}; "
            f"it accepts: {', '.join(accepted) or 'nothing'}."
        ) from exc


# ------------------------------------------------------------------------ vector
# The original GEM defined make_vec (and VECTOR_BACKENDS) here; they live in gem.vector, a layer above
# the registry. Like an env's entry point, each is named by a "module:attribute" string and loaded on
# first use, so the registry never imports the vector package (``from gem.envs.registration import
# make_vec`` still works).
MOVED_TO_VECTOR: dict[str, str] = {
    "make_vec": "gem.vector.backends:make_vec",
    "VECTOR_BACKENDS": "gem.vector.backends:VECTOR_BACKENDS",
}


def __getattr__(name: str) -> Any:
    if name in MOVED_TO_VECTOR:
        module_name, _, attr = MOVED_TO_VECTOR[name].partition(":")
        return getattr(importlib.import_module(module_name), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------------- print
# The modules the envs of each extra import, to tell whether the extra is installed without importing
# anything (importlib.util.find_spec). tests/test_cli.py checks that each one comes from its extra in
# pyproject.toml. An extra not listed here (a plugin's own) is never marked.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "games": ("wordfreq", "english_words"),
    "math": ("math_verify", "datasets"),
    "qa": ("datasets",),
    "code": ("datasets",),
    "search": ("bm25s",),
    "rg": ("reasoning_gym",),
}


@functools.lru_cache(maxsize=None)
def extra_installed(extra: str) -> Optional[bool]:
    """Whether the modules of ``extra`` (:data:`EXTRA_MODULES`) can be imported; ``None`` if unknown."""
    modules = EXTRA_MODULES.get(extra)
    if modules is None:
        return None
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in modules)


def missing_extras(env_ids: Iterable[str]) -> dict[str, str]:
    """``{id: extra}`` for each of ``env_ids`` whose spec names an extra that is not installed."""
    missing = {}
    for env_id in env_ids:
        found = registry.get(env_id)
        if found is not None and found.extra and extra_installed(found.extra) is False:
            missing[env_id] = found.extra
    return missing


def print_envs(family: Optional[str] = None, file: Optional[IO[str]] = None) -> None:
    """Print a table of the registered ids, grouped by family (only ``family`` if given).

    An id whose extra is not installed is marked with it (a family that needs one extra as a whole
    says so once), with the command that installs it.
    """
    out = file if file is not None else sys.stdout
    ids = list_envs(family)
    groups: dict[str, list[str]] = {}
    for env_id in ids:
        groups.setdefault(env_id.split(":", 1)[0], []).append(env_id)
    width = max((len(i) for i in ids), default=10) + 2
    for fam, members in groups.items():
        title = FAMILIES.get(fam, "")
        out.write(f"\n{fam} ({len(members)}{': ' + title if title else ''})\n")
        notes = []
        note = _family_notes[fam]() if fam in _family_notes else None
        if note:
            notes.append(note)
        missing = missing_extras(members)
        extras = list(dict.fromkeys(missing.values()))
        if len(missing) == len(members) and len(extras) == 1:  # the whole family: one line says it
            notes.append(f"needs the {extras[0]!r} extra: {install_hint(extras[0])}")
            missing = {}
        else:
            notes.extend(f"[needs {e}]: the {e!r} extra is not installed: {install_hint(e)}" for e in extras)
        for line in dict.fromkeys(notes):
            out.write(f"  ({line})\n")
        for env_id in members:
            desc = registry[env_id].description if env_id in registry else ""
            mark = f"  [needs {missing[env_id]}]" if env_id in missing else ""
            out.write(f"  {env_id:<{width}}{desc}{mark}\n")
    out.write(f"\n{len(ids)} environment{'' if len(ids) == 1 else 's'}.\n")


# ------------------------------------------------------------------------ interop
# Ids that name an env outside GEM (gem.interop, docs/interop.md): "openenv:<base url>",
# "verifiers:<module>", "gymnasium:<Gymnasium id>". ``make`` builds them on demand; they are never
# registered (``spec`` does not know them), because such an id names an arbitrary URL or module:
# a server serves registered ids only, so no client can make it connect or import elsewhere.
_INTEROP_PREFIXES: dict[str, tuple[str, str, str]] = {  # prefix -> (entry point, kwarg, extra)
    "openenv:": ("gem.interop.openenv.client:OpenEnvEnv", "base_url", "server"),
    "verifiers:": ("gem.interop.verifiers.bridge:VerifiersEnv", "environment", "verifiers"),
    "gymnasium:": ("gem.interop.gymnasium:GymnasiumTextEnv", "gym_id", "gymnasium"),
}


def interop_spec(env_id: Any) -> Optional[EnvSpec]:
    """The spec of an id naming an outside env (``openenv:<url>``, ...), or ``None``."""
    if not isinstance(env_id, str):
        return None
    for prefix, (entry_point, kwarg, extra) in _INTEROP_PREFIXES.items():
        if env_id.startswith(prefix) and len(env_id) > len(prefix):
            target = env_id[len(prefix):]
            return EnvSpec(env_id, entry_point, {kwarg: target}, family=prefix.rstrip(":"), extra=extra,
                           description=f"{target} through gem.interop")
    return None
