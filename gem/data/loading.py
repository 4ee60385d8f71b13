"""``load``: rows from a local file, a bundled name or the Hugging Face hub (see ``gem.data``)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from gem.errors import DatasetNotFound, ResourceUnavailable, missing_extra

logger = logging.getLogger(__name__)

BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
LOCAL_SUFFIXES = (".jsonl.gz", ".jsonl", ".json.gz", ".json", ".parquet", ".csv")

# family -> (field the question goes to, field the answer goes to)
FAMILY_FIELDS: dict[str, tuple[str, str]] = {
    "math": ("problem", "answer"),
    "eval": ("problem", "answer"),
    "qa": ("question", "answer"),
    "logic": ("question", "answer"),
    "code": ("problem", "tests"),
}

HUB_PROBE_TIMEOUT_S = 3.0
HUB_PROBE_TTL_S = 60.0
_OFFLINE_VALUES = {"1", "true", "yes", "on"}

_cache: dict[tuple, list[dict[str, Any]]] = {}
_cache_lock = threading.Lock()
_probe: dict[str, tuple[float, bool]] = {}


# --------------------------------------------------------------------- public
def load(
    source: str,
    split: Optional[str] = "train",
    *,
    family: Optional[str] = None,
    question_key: Optional[str] = None,
    answer_key: Optional[str] = None,
    keys: Optional[Mapping[str, str]] = None,
    cache: bool = True,
    **hub_kwargs: Any,
) -> list[dict[str, Any]]:
    """Rows of ``source`` (a local path, a bundled name or a hub id), renamed to the family's fields.

    Args:
        source: ``/path/to/file.jsonl`` (or ``.jsonl.gz``, ``.json``, ``.parquet``, ``.csv``, a
            directory), a bundled name (``"arithmetic"``) or a hub id (``"axon-rl/GSM-8k"``).
        split: which split; a single local file is one split and ignores it (except a JSON object
            of ``{split: rows}``). ``None`` takes the only split there is.
        family: ``"math"``, ``"qa"``, ``"logic"``, ``"code"``: the target field names of
            ``question_key``/``answer_key`` (see :data:`FAMILY_FIELDS`).
        question_key, answer_key: the source's columns holding the question and the answer.
        keys: ``{target field: source column}``, for any other renaming (applied after the two above).
        cache: reuse the rows of an identical earlier call in this process.
        **hub_kwargs: passed to ``datasets.load_dataset`` (``name=``, ``revision=``, ``cache_dir=``).

    Raises:
        DatasetNotFound: a local path that does not exist, or a name without ``/`` that is no
            bundled dataset (the message lists the bundled names).
        ResourceUnavailable: the hub cannot be reached (the message names the source and how to
            use a local copy).
        ValueError: a local file cannot be read, or a requested column or split is missing (the
            message lists what exists).
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"source must be a path, a bundled name or a hub id, got {source!r}.")
    renames = _renames(family, question_key, answer_key, keys)
    kind, location = _resolve(source)
    stamp = _stamp(location) if kind != "hub" else None
    key = (kind, str(location), split, tuple(renames.items()), stamp, tuple(sorted(map(str, hub_kwargs.items()))))
    if cache:
        with _cache_lock:
            hit = _cache.get(key)
        if hit is not None:
            return list(hit)
    if kind == "hub":
        rows = _load_hub(source, split, hub_kwargs)
    else:
        rows = _load_local(Path(location), split, source)
    rows = _rename(rows, renames, source)
    if cache:
        with _cache_lock:
            _cache[key] = rows
    return list(rows)


def clear_cache() -> None:
    """Forget every cached result (the next ``load`` reads its source again)."""
    with _cache_lock:
        _cache.clear()
    _probe.clear()


def bundled_names() -> list[str]:
    """The names of the datasets shipped in ``gem/data/bundled``."""
    if not BUNDLED_DIR.is_dir():
        return []
    names = set()
    for path in BUNDLED_DIR.iterdir():
        for suffix in (".jsonl.gz", ".jsonl"):
            if path.name.endswith(suffix):
                names.add(path.name[: -len(suffix)])
    return sorted(names)


def bundled_path(name: str) -> Optional[Path]:
    """The file of bundled dataset ``name``, or ``None`` if there is none."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    for suffix in (".jsonl.gz", ".jsonl"):
        path = BUNDLED_DIR / f"{name}{suffix}"
        if path.is_file():
            return path
    return None


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the Hugging Face hub answers within ``timeout`` seconds (cached for a minute).

    ``HF_HUB_OFFLINE=1`` / ``HF_DATASETS_OFFLINE=1`` make it ``False`` without a network call.
    """
    if any(os.environ.get(v, "").lower() in _OFFLINE_VALUES for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    now = time.monotonic()
    seen = _probe.get(endpoint)
    if seen is not None and now - seen[0] < HUB_PROBE_TTL_S:
        return seen[1]
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
        ok = True
    except urllib.error.HTTPError:
        ok = True  # it answered, if unhappily
    except (OSError, ValueError):
        ok = False
    _probe[endpoint] = (now, ok)
    return ok


# ------------------------------------------------------------------ resolving
def _looks_like_path(source: str) -> bool:
    return (
        source.startswith(("/", "./", "../", "~", "\\"))
        or (len(source) > 1 and source[1] == ":")  # C:\...
        or source.lower().endswith(LOCAL_SUFFIXES)
    )


def _resolve(source: str) -> tuple[str, Any]:
    """("local", Path) | ("bundled", Path) | ("hub", id)."""
    path = Path(os.path.expanduser(source))
    if path.exists():
        return "local", path.resolve()
    if _looks_like_path(source):
        raise DatasetNotFound(
            f"Dataset file {source!r} does not exist. Give the path of a .jsonl, .jsonl.gz, .json, "
            f".parquet or .csv file (or a directory of <split>.<ext> files)."
        )
    bundled = bundled_path(source)
    if bundled is not None:
        return "bundled", bundled
    if "/" not in source:
        raise DatasetNotFound(
            f"{source!r} is not a bundled dataset (bundled: {', '.join(bundled_names()) or 'none'}) nor a "
            "hub id (owner/name) nor an existing file."
        )
    return "hub", source


def _stamp(path: Any) -> tuple:
    """What changes when a local source changes (so the cache re-reads it)."""
    p = Path(path)
    try:
        st = p.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return ()


# ------------------------------------------------------------------ local files
def _load_local(path: Path, split: Optional[str], source: str) -> list[dict[str, Any]]:
    if path.is_dir():
        return _load_dir(path, split, source)
    name = path.name.lower()
    try:
        if name.endswith((".jsonl", ".jsonl.gz")):
            return _read_jsonl(path)
        if name.endswith((".json", ".json.gz")):
            return _read_json(path, split, source)
        if name.endswith(".parquet"):
            return _read_parquet(path)
        if name.endswith(".csv"):
            with open(path, newline="", encoding="utf-8") as fh:
                return [dict(row) for row in csv.DictReader(fh)]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"Could not read dataset file {source!r}: {exc}") from exc
    raise ValueError(
        f"Unsupported dataset file {source!r}; use one of: {', '.join(LOCAL_SUFFIXES)}."
    )


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise json.JSONDecodeError(f"line {lineno}: {exc.msg}", exc.doc, exc.pos) from exc
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {lineno} is a {type(row).__name__}, not a JSON object.")
            rows.append(row)
    return rows


def _read_json(path: Path, split: Optional[str], source: str) -> list[dict[str, Any]]:
    with _open_text(path) as fh:
        data = json.load(fh)
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        if lists and len(lists) == len(data):
            return _pick_split(lists, split, source)
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ValueError(f"{source!r} must hold a JSON list of objects or {{split: [objects]}}.")
    return data


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise missing_extra("Reading parquet files", "math", "pyarrow") from exc
    return pq.read_table(path).to_pylist()


def _load_dir(path: Path, split: Optional[str], source: str) -> list[dict[str, Any]]:
    if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
        datasets = _import_datasets(source)
        loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            loaded = _pick_split(dict(loaded), split, source)
        return loaded.to_list()
    files = {}
    for child in sorted(path.iterdir()):
        for suffix in LOCAL_SUFFIXES:
            if child.name.lower().endswith(suffix):
                files.setdefault(child.name[: -len(suffix)], child)
    if not files:
        raise DatasetNotFound(
            f"Directory {source!r} holds no dataset: put <split>.jsonl (or .parquet, .csv, .json) in it."
        )
    chosen = _pick_split(files, split, source)
    return _load_local(chosen, split, str(chosen))


def _pick_split(splits: Mapping[str, Any], split: Optional[str], source: str) -> Any:
    if split is None:
        if len(splits) == 1:
            return next(iter(splits.values()))
        raise ValueError(f"{source!r} has several splits; choose one with split=: {', '.join(splits)}.")
    if split not in splits:
        raise ValueError(f"{source!r} has no split {split!r}; it has: {', '.join(splits)}.")
    return splits[split]


# ------------------------------------------------------------------------- hub
def _import_datasets(source: str) -> Any:
    try:
        import datasets
    except ImportError as exc:
        raise missing_extra(f"Loading {source!r} from the Hugging Face hub", "math", "datasets") from exc
    return datasets


_flags_lock = threading.Lock()


@contextlib.contextmanager
def _offline_flags(datasets: Any, offline: bool) -> Iterator[None]:
    """Make ``HF_HUB_OFFLINE`` hold for this call even if the libraries were imported before it was set.

    huggingface_hub and datasets read the variable once, at import; without this, setting it later
    (as a test or a notebook does) would still send requests and retry them for minutes.
    """
    if not offline:
        yield
        return
    import huggingface_hub.constants as hub_constants

    targets = [(hub_constants, "HF_HUB_OFFLINE"), (datasets.config, "HF_HUB_OFFLINE")]
    with _flags_lock:
        saved = [(obj, name, getattr(obj, name, None)) for obj, name in targets if hasattr(obj, name)]
        for obj, name, _ in saved:
            setattr(obj, name, True)
        try:
            yield
        finally:
            for obj, name, value in saved:
                setattr(obj, name, value)


def _offline_message(source: str, reason: str) -> str:
    return (
        f"Dataset {source!r} from the Hugging Face hub is unavailable ({reason}). Point the env at a "
        f"local copy instead, e.g. gem.make(id, dataset_name='/path/to/file.jsonl') (or .parquet, "
        f".csv, .json, a directory), or download it where the hub is reachable and set "
        f"HF_HUB_OFFLINE=1 to read datasets' cache."
    )


def _load_hub(source: str, split: Optional[str], hub_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    forced_offline = any(
        os.environ.get(v, "").lower() in _OFFLINE_VALUES for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )
    if not forced_offline and not hub_reachable():
        raise ResourceUnavailable(_offline_message(source, "the hub cannot be reached from this machine"))
    datasets = _import_datasets(source)
    # datasets draws its own download bars on stderr (HF_DATASETS_DISABLE_PROGRESS_BARS=1 hides them)
    logger.info("Loading %r from the Hugging Face hub (downloaded once, then read from its cache)", source)
    try:
        with _offline_flags(datasets, forced_offline):
            loaded = datasets.load_dataset(source, split=split, **hub_kwargs)
    except ValueError as exc:  # an unknown split or config is the user's to fix
        if "split" in str(exc).lower() or "config" in str(exc).lower():
            raise ValueError(f"{source!r}: {exc}") from exc
        raise ResourceUnavailable(_offline_message(source, f"{type(exc).__name__}: {exc}")) from exc
    except Exception as exc:  # network, auth, missing repo, missing cache
        raise ResourceUnavailable(_offline_message(source, f"{type(exc).__name__}: {exc}")) from exc
    if isinstance(loaded, datasets.DatasetDict):
        loaded = _pick_split(dict(loaded), None, source)
    return loaded.to_list()


# -------------------------------------------------------------------- renaming
def _renames(
    family: Optional[str],
    question_key: Optional[str],
    answer_key: Optional[str],
    keys: Optional[Mapping[str, str]],
) -> dict[str, str]:
    """{target field: source column}."""
    renames: dict[str, str] = {}
    if question_key is not None or answer_key is not None:
        if family is None:
            raise ValueError(
                "question_key/answer_key need family= to know the target fields; "
                f"choose one of: {', '.join(FAMILY_FIELDS)} (or pass keys={{target: column}})."
            )
    if family is not None:
        if family not in FAMILY_FIELDS:
            raise ValueError(f"Unknown family {family!r}; choose one of: {', '.join(FAMILY_FIELDS)}.")
        q_field, a_field = FAMILY_FIELDS[family]
        renames[q_field] = question_key or q_field
        renames[a_field] = answer_key or a_field
    renames.update(keys or {})
    return renames


def _rename(rows: list[dict[str, Any]], renames: dict[str, str], source: str) -> list[dict[str, Any]]:
    if not renames or not rows:
        return rows
    columns = set().union(*(r.keys() for r in rows[:50]))
    missing = [col for col in renames.values() if col not in columns]
    if missing:
        raise ValueError(
            f"{source!r} has no column(s) {', '.join(map(repr, missing))}; its columns are: "
            f"{', '.join(sorted(columns))}. Pass question_key=/answer_key= naming the right ones."
        )
    moves = {target: col for target, col in renames.items() if target != col}
    if not moves:
        return rows
    out = []
    for row in rows:
        new = {k: v for k, v in row.items() if k not in moves.values()}
        for target, col in moves.items():
            new[target] = row.get(col)
        out.append(new)
    return out


