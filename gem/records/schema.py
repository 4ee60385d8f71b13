"""The trajectory schema: :data:`SCHEMA_VERSION`, the JSON Schema file and :func:`record_problems`.

The schema is ``gem/records/trajectory.schema.json`` (JSON Schema draft 2020-12), documented in
docs/records.md. :func:`record_problems` checks a record against it with the ``jsonschema``
package when it is installed, else with a small checker of the keywords the file uses, and then
checks what a JSON Schema cannot say: as many logprobs as completion ids, ids only with a
``token_source`` that says where they came from, one reward per turn.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parent / "trajectory.schema.json"
TOKEN_SOURCES = ("none", "server", "server_logprob_tokens", "sampler", "retokenized", "verifiers", "openenv")


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The trajectory JSON Schema (a dict)."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


_TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return isinstance(value, _TYPES[name])


def _check(value: Any, node: dict[str, Any], root: dict[str, Any], where: str, out: list[str]) -> None:
    """The keywords of draft 2020-12 that the trajectory schema uses."""
    if "$ref" in node:
        target: Any = root
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    if "const" in node and value != node["const"]:
        out.append(f"{where}: must be {node['const']!r}, got {value!r:.60}")
        return
    if "enum" in node and value not in node["enum"]:
        out.append(f"{where}: must be one of {node['enum']}, got {value!r:.60}")
        return
    types = node.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_is_type(value, n) for n in names):
            out.append(f"{where}: must be {' or '.join(names)}, got {type(value).__name__}")
            return
    if isinstance(value, str):
        if len(value) < node.get("minLength", 0):
            out.append(f"{where}: must not be empty")
        if "pattern" in node and not re.search(node["pattern"], value):
            out.append(f"{where}: {value!r:.60} does not match {node['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "minimum" in node:
        if value < node["minimum"]:
            out.append(f"{where}: must be >= {node['minimum']}, got {value!r}")
    if isinstance(value, dict):
        for name in node.get("required", ()):
            if name not in value:
                out.append(f"{where}: missing field {name!r}")
        for name, sub in node.get("properties", {}).items():
            if name in value:
                _check(value[name], sub, root, f"{where}.{name}", out)
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            _check(item, node["items"], root, f"{where}[{i}]", out)


def _schema_problems(record: Any) -> list[str]:
    try:
        import jsonschema
    except ImportError:
        problems: list[str] = []
        _check(record, schema(), schema(), "record", problems)
        return problems
    validator = jsonschema.Draft202012Validator(schema())
    return [
        f"record{''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in err.absolute_path)}: {err.message}"
        for err in validator.iter_errors(record)
    ]


def token_problems(turn: dict[str, Any], where: str = "turn") -> list[str]:
    """What is wrong with a turn's token fields (beyond their types)."""
    problems = []
    source = turn.get("token_source")
    ids = turn.get("completion_token_ids")
    prompt = turn.get("prompt_token_ids")
    logprobs = turn.get("completion_logprobs")
    if source == "none" and (ids is not None or prompt is not None or logprobs is not None):
        problems.append(f"{where}: token ids or logprobs with token_source 'none' (say where they came from)")
    if source in TOKEN_SOURCES[1:] and ids is None:
        problems.append(f"{where}: token_source {source!r} without completion_token_ids")
    if source == "retokenized" and not turn.get("tokenizer"):
        problems.append(f"{where}: a retokenized turn must name its tokenizer")
    if logprobs is not None and (not isinstance(ids, list) or len(logprobs) != len(ids)):
        n = len(ids) if isinstance(ids, list) else 0
        problems.append(f"{where}: {len(logprobs)} completion_logprobs for {n} completion_token_ids")
    return problems


def record_problems(record: Any) -> list[str]:
    """Every way ``record`` departs from the trajectory schema (empty: it conforms)."""
    problems = _schema_problems(record)
    if problems or not isinstance(record, dict):
        return problems
    turns = record.get("turns") or []
    for i, turn in enumerate(turns):
        problems.extend(token_problems(turn, f"record.turns[{i}]"))
    if len(record.get("rewards") or []) != len(turns):
        problems.append(f"record: {len(record.get('rewards') or [])} rewards for {len(turns)} turns")
    return problems
