"""Env versions: a content hash of what decides a registered env's behaviour.

``env_version(id)`` hashes, for the id's spec:

* **code**: the entry point's module and every GEM module it imports, directly or through others
  (at module level or inside functions), within the packages that decide an env's behaviour:
  ``gem/envs`` (the family's own files), ``gem/grading``, ``gem/tools``, ``gem/sandbox``,
  ``gem/data``, ``gem/utils``, ``gem/compat``, ``gem/core.py``,
  ``gem/params.py`` and ``gem/errors.py``. The registry table (``gem/envs/__init__.py``,
  ``registration.py``) is not code of the env: its part is the kwargs, below. For a plugin's env,
  the entry point's module and the modules of its own top-level package that it imports.
* **data**: the files other than Python beside each of those modules and in a ``data/`` folder
  next to it (word lists, catalogues), and the bundled datasets when the env reads through
  :mod:`gem.data`.
* **parameters**: the spec's entry point and default kwargs, encoded as canonical JSON.
* **libraries**: the installed version of each library of the env's extra (``math-verify`` for
  ``math:``, ``reasoning-gym`` for ``rg:``...), since they grade or generate the tasks.

Paths are relative to the package root and text files are hashed with ``\\n`` line endings, so the
same tree gives the same version on every machine. A dataset read from the Hugging Face hub is
named by its id in the kwargs, not hashed (it is not on disk until used).

Nothing here runs at ``import gem`` or ``gem list``: versions are computed when asked
(``gem list --versions``, a record, ``gem.make(id, version=...)``) and cached per process. The
registry's :func:`gem.envs.registration.env_version` and ``version_manifest`` are the entry points.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import re
import threading
from pathlib import Path
from typing import Any, Optional

VERSION_LENGTH = 12  # hex characters of the sha256 that name a version

_GEM_DIR = Path(__file__).resolve().parents[1]  # .../gem
_ROOT = _GEM_DIR.parent

# GEM modules whose code decides an env's behaviour (path prefixes relative to the package root).
FOLLOWED = (
    "gem/envs/", "gem/grading/", "gem/tools/", "gem/sandbox/", "gem/data/",
    "gem/utils/", "gem/compat/", "gem/core.py", "gem/params.py", "gem/errors.py",
)
# Not the env's code: the id table (its part is the spec's kwargs), the checker, an LLM agent.
NOT_FOLLOWED = (
    "gem/envs/__init__.py", "gem/envs/registration.py", "gem/checks/",
)
# Packages that start their own worker processes by module name (``python -m ...``): when the env's
# code reaches one of them, every module of the package counts.
WHOLE_PACKAGES = ("gem/grading/", "gem/sandbox/")
TEXT_SUFFIXES = {".py", ".json", ".jsonl", ".txt", ".md", ".csv", ".tsv", ".yaml", ".yml", ".toml", ".html"}
BUNDLED_DIR = "gem/data/bundled"

_lock = threading.Lock()


def _followed(rel: str) -> bool:
    return rel.startswith(FOLLOWED) and not rel.startswith(NOT_FOLLOWED)


@functools.lru_cache(maxsize=None)
def _file_digest(path: str) -> str:
    """sha256 of a file's content (text files with ``\\n`` line endings)."""
    data = Path(path).read_bytes()
    if Path(path).suffix in TEXT_SUFFIXES:
        data = data.replace(b"\r\n", b"\n")
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=None)
def _module_file(name: str) -> Optional[Path]:
    """The source file of module ``name``: found on disk for GEM's own, else by the import system."""
    if name == "gem" or name.startswith("gem."):
        base = _ROOT.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        from gem.compat.aliases import new_path

        moved = new_path(name)  # a former path has no file: its code is at the new path
        return _module_file(moved) if moved is not None and moved != name else None
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    origin = getattr(found, "origin", None) if found is not None else None
    if not origin or not origin.endswith(".py"):
        return None
    return Path(origin)


_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*(?:\\\n[^\n#;]*)*)", re.M
)
_PLAIN_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)", re.M)


@functools.lru_cache(maxsize=None)
def _imports(path: str, module: str) -> tuple[str, ...]:
    """Every module name ``path`` imports (at any depth of the file), relative imports resolved.

    A scan of the import statements' text rather than a parse (far cheaper over a whole tree); a
    line in a docstring that reads like an import only adds a module, it never loses one.
    """
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    names: list[str] = []
    for match in _PLAIN_IMPORT.finditer(text):
        names.extend(part.split()[0] for part in match.group(1).split(",") if part.strip())
    for match in _FROM_IMPORT.finditer(text):
        base, what = match.group(1), match.group(2)
        level = len(base) - len(base.lstrip("."))
        base = base[level:]
        if level:
            parts = package.split(".")
            parent = ".".join(parts[: len(parts) - level + 1]) if level > 1 else package
            base = f"{parent}.{base}" if base else parent
        if not base:
            continue
        names.append(base)
        for part in what.strip("()").replace("\\", " ").split(","):
            words = part.split()
            if words and words[0] != "*" and words[0].isidentifier():
                names.append(f"{base}.{words[0]}")
    return tuple(dict.fromkeys(n for n in names if n))


def _relative(path: Path, top: Path) -> str:
    try:
        return path.relative_to(top).as_posix()
    except ValueError:
        pass
    try:
        return path.resolve().relative_to(top).as_posix()
    except ValueError:
        return path.name


@functools.lru_cache(maxsize=None)
def _code_closure(module: str) -> dict[str, Path]:
    """``{relative path: file}`` of ``module`` and the modules it imports that decide behaviour."""
    own_package = module.split(".")[0]
    gem_env = own_package == "gem"
    first = _module_file(module)
    if first is None:
        return {}
    top = _ROOT if gem_env else first.resolve().parents[len(module.split(".")) - (first.name != "__init__.py")]
    found: dict[str, Path] = {}
    todo = [(module, first)]
    while todo:
        name, path = todo.pop()
        rel = _relative(path, top)
        if rel in found:
            continue
        found[rel] = path
        for imported in _imports(str(path), name):
            if imported.split(".")[0] != own_package and not imported.startswith("gem."):
                continue
            target = _module_file(imported) if imported.split(".")[0] == own_package or gem_env else None
            if target is None and imported.startswith("gem.") and not gem_env:
                continue  # a plugin's use of gem: GEM's own version is in the record already
            if target is None:
                continue
            target_rel = _relative(target, top)
            if gem_env and not _followed(target_rel):
                continue
            if target_rel not in found:
                todo.append((imported, target))
    if gem_env:
        for package in WHOLE_PACKAGES:
            if any(rel.startswith(package) for rel in found):
                for path in sorted((_ROOT / package).rglob("*.py")):
                    rel = _relative(path, top)
                    if rel not in found and "__pycache__" not in path.parts:
                        found[rel] = path
                        parts = list(Path(rel).with_suffix("").parts)
                        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                        found.update(_code_closure_extra(name, path, top, found))
    return found


def _code_closure_extra(
    module: str, path: Path, top: Path, known: dict[str, Path]
) -> dict[str, Path]:
    """The followed GEM modules that ``module`` (a file of a whole package) imports, not yet known."""
    extra: dict[str, Path] = {}
    todo = [(module, path)]
    while todo:
        name, file = todo.pop()
        for imported in _imports(str(file), name):
            if not imported.startswith("gem."):
                continue
            target = _module_file(imported)
            if target is None:
                continue
            rel = _relative(target, top)
            if _followed(rel) and rel not in known and rel not in extra:
                extra[rel] = target
                todo.append((imported, target))
    return extra


def _data_files(code: dict[str, Path], top: Path) -> dict[str, Path]:
    """Files other than Python beside each code file and in a ``data/`` folder next to it."""
    data: dict[str, Path] = {}
    folders = {p.parent for p in code.values()}
    if any(rel.startswith("gem/data/") for rel in code):
        folders.add(_ROOT / BUNDLED_DIR)
    for folder in sorted(folders):
        for sub in (folder, folder / "data"):
            if not sub.is_dir() or (sub.name == "data" and (sub / "__init__.py").exists()):
                continue  # gem/data is a package (its bundled datasets count when the env reads it)
            candidates = sub.rglob("*") if sub.name in ("data", "bundled") else sub.iterdir()
            for path in candidates:
                if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
                    data[_relative(path, top)] = path
    return data


def _canonical(value: Any) -> Any:
    """A JSON-able form of a kwarg value that does not depend on the process (no addresses)."""
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if callable(value):
        return f"<{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}>"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces, no process-specific text)."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@functools.lru_cache(maxsize=None)
def _library_version(module: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return "not installed"


def _manifest(spec: Any, library_modules: tuple[str, ...]) -> dict[str, Any]:
    entry = spec.entry_point
    if callable(entry):
        module = getattr(entry, "__module__", "") or ""
        entry_name = f"{module}:{getattr(entry, '__qualname__', type(entry).__name__)}"
    else:
        module = entry.partition(":")[0]
        entry_name = entry
    code = dict(_code_closure(module)) if module else {}
    top = _ROOT if module.split(".")[0] == "gem" else None
    if top is None and code:
        first = next(iter(code.values()))
        top = first.resolve().parents[len(module.split(".")) - (first.name != "__init__.py")]
    files = {**code, **_data_files(code, top or _ROOT)}
    digests = {rel: _file_digest(str(path)) for rel, path in sorted(files.items())}
    kwargs = json.loads(canonical_json(spec.kwargs))
    libraries = {name: _library_version(name) for name in library_modules}
    h = hashlib.sha256()
    h.update(f"entry_point\0{entry_name}\n".encode())
    h.update(f"kwargs\0{canonical_json(kwargs)}\n".encode())
    for rel, digest in digests.items():
        h.update(f"file\0{rel}\0{digest}\n".encode())
    for name, version in sorted(libraries.items()):
        h.update(f"library\0{name}\0{version}\n".encode())
    return {
        "version": h.hexdigest()[:VERSION_LENGTH],
        "entry_point": entry_name,
        "kwargs": kwargs,
        "files": digests,
        "libraries": libraries,
    }


_manifests: dict[str, dict[str, Any]] = {}


def manifest_of_spec(spec: Any, library_modules: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a version hashes for ``spec`` (an :class:`~gem.envs.registration.EnvSpec`) and the
    modules of its extra: ``{"version", "entry_point", "kwargs", "files": {path: sha256},
    "libraries": {module: version}}``. Cached per process (:func:`clear_cache` forgets)."""
    key = f"{spec.id}\0{spec.entry_point!r}\0{canonical_json(spec.kwargs)}\0{library_modules}"
    with _lock:
        cached = _manifests.get(key)
    if cached is not None:
        return cached
    manifest = _manifest(spec, tuple(library_modules))
    with _lock:
        _manifests[key] = manifest
    return manifest


def clear_cache() -> None:
    """Forget computed versions (after files changed in this process: tests, a long-lived server)."""
    with _lock:
        _manifests.clear()
    _file_digest.cache_clear()
    _imports.cache_clear()
    _library_version.cache_clear()
    _module_file.cache_clear()
    _code_closure.cache_clear()
