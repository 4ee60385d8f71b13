"""Token ids across the bridges: the ids and logprobs a verifiers or OpenEnv rollout recorded,
carried into GEM's trajectory record (docs/records.md, docs/interop.md).

GEM's env protocols (``gem serve``, OpenEnv's, the verifiers env API) carry text, never tokens:
the ids live on the policy's side. When the other framework's policy side recorded them, these
functions keep them, turn by turn, with ``token_source`` naming where they came from:

- ``"verifiers"``: a verifiers trace (``verifiers.v1.Trace``, live or one ``traces.jsonl`` line).
  Each sampled assistant node holds the tokens it adds to the sequence (``token_ids``), a
  ``mask`` (True on the sampled completion) and one logprob per sampled token. A turn's
  ``prompt_token_ids`` are the tokens of its ancestors and the node's unmasked scaffold: what the
  model saw; its completion ids the masked ones. verifiers' renderer client (against vLLM) fills
  them; its plain OpenAI client does not, and such a turn says ``none``, with a note.
- ``"openenv"``: OpenEnv's per-call capture (``openenv.core.harness.rollout.TraceEntry`` dicts,
  or a ``TrainingTrace``): ``prompt_token_ids``, ``completion_token_ids`` (or vLLM's
  ``completion_tokens`` written ``token_id:N``) and ``per_token_logps``. OpenEnv's env protocol
  itself (what ``gem serve --protocol openenv`` speaks) has no token fields: an episode played
  over it has ids only from such a capture, or from ``gem proxy``.

Nothing is tokenised here: a turn without ids from the other side is ``none``.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from gem.records.join import joined_record

_TOKEN_ID = re.compile(r"^token_id:(\d+)$")
VERIFIERS_LOGPROB_NOTE = "logprobs as verifiers' JSON records keep them (rounded to 4 decimals)"


def _dump(obj: Any) -> Any:
    """A pydantic object as Python data (full precision); data as it is."""
    dump = getattr(obj, "model_dump", None)
    return dump(mode="python") if callable(dump) else obj


def _none(note: str) -> dict[str, Any]:
    return {"token_source": "none", "token_note": note}


# ------------------------------------------------------------------------------ verifiers
def verifiers_calls(trace: Any, rounded: Optional[bool] = None) -> list[dict[str, Any]]:
    """One call record per sampled assistant turn of a verifiers trace, in order, with its token
    fields (``token_source: "verifiers"``, or ``"none"`` and a note when the node has no ids).

    ``rounded``: whether the logprobs were read back from verifiers' JSON (4 decimals); default:
    yes for a dict (a ``traces.jsonl`` line), no for a live ``Trace``.
    """
    if rounded is None:
        rounded = isinstance(trace, dict)
    data = _dump(trace)
    nodes = data.get("nodes") or []
    model_calls = {c.get("node"): c for c in data.get("calls") or [] if isinstance(c, dict)}
    calls = []
    for index, node in enumerate(nodes):
        message = node.get("message") or {}
        if not node.get("sampled") or message.get("role") != "assistant":
            continue
        call: dict[str, Any] = {"reply": _text(message.get("content"))}
        meta = model_calls.get(index) or {}
        if meta.get("model"):
            call["model"] = meta["model"]
        usage = meta.get("usage") or {}
        if usage:
            call["usage"] = {"prompt_tokens": int(usage.get("input_tokens") or 0),
                             "completion_tokens": int(usage.get("output_tokens") or 0)}
        call.update(_node_tokens(nodes, index, rounded))
        calls.append(call)
    return calls


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _node_tokens(nodes: list[dict[str, Any]], index: int, rounded: bool) -> dict[str, Any]:
    node = nodes[index]
    ids, mask, logprobs = list(node.get("token_ids") or []), list(node.get("mask") or []), list(node.get("logprobs") or [])
    if not ids:
        return _none("the verifiers trace has no token ids for this turn (its client returned none: "
                     "verifiers' renderer client against vLLM records them)")
    if len(mask) != len(ids) or not any(mask):
        return _none("the verifiers trace's mask does not mark this turn's sampled tokens")
    first = mask.index(True)
    if not all(mask[first:]):
        return _none("the verifiers trace's sampled tokens are not one span at the end of the node")
    completion = ids[first:]
    prompt: list[int] = []
    seen, parent = set(), node.get("parent")
    chain = []
    while isinstance(parent, int) and 0 <= parent < len(nodes) and parent not in seen:
        seen.add(parent)
        chain.append(parent)
        parent = nodes[parent].get("parent")
    for ancestor in reversed(chain):
        prompt.extend(nodes[ancestor].get("token_ids") or [])
    prompt.extend(ids[:first])
    fields: dict[str, Any] = {"token_source": "verifiers", "prompt_token_ids": prompt, "completion_token_ids": completion}
    if len(logprobs) == len(completion):
        fields["completion_logprobs"] = logprobs
        if rounded:
            fields["token_note"] = VERIFIERS_LOGPROB_NOTE
    else:
        fields["token_note"] = f"{len(logprobs)} logprobs for {len(completion)} sampled tokens in the trace: left out"
    return fields


def verifiers_record(trace: Any, key: Optional[str] = None) -> dict[str, Any]:
    """The trajectory record of a rollout of a ``gem export verifiers`` package (its trace, live
    or a ``traces.jsonl`` line): the env's steps from ``trace.info["gem_steps"]`` joined with the
    turns' token fields (:func:`verifiers_calls`). Raises ``ValueError`` for a trace that does not
    hold a GEM episode (another package's, or one exported before steps were recorded)."""
    data = _dump(trace)
    info = data.get("info") or {}
    steps = info.get("gem_steps")
    if not isinstance(steps, list) or not isinstance(info.get("gem_env_id"), str):
        raise ValueError("the trace holds no GEM episode (trace.info has no gem_env_id and gem_steps: "
                         "export the env again with this GEM's gem export verifiers)")
    calls = verifiers_calls(trace)
    if len(calls) > len(steps):  # the run was cut before the env stepped the last reply
        calls = calls[:len(steps)]
    body = {"env_id": info["gem_env_id"], "seed": info.get("gem_seed"), "observation0": info.get("gem_observation0", ""),
            "steps": steps}
    models = [c.get("model") for c in calls if c.get("model")]
    return joined_record(key or f"{info['gem_env_id']}#{info.get('gem_seed')}", body, calls, agent="verifiers",
                         model=models[0] if models else None, seconds=0.0)


# ------------------------------------------------------------------------------ OpenEnv
def openenv_calls(entries: Any) -> list[dict[str, Any]]:
    """One call record per OpenEnv capture entry (``TraceEntry`` dicts, a ``TrainingTrace`` or its
    ``turns``), with its token fields (``token_source: "openenv"``, or ``"none"`` and a note)."""
    data = _dump(entries)
    if isinstance(data, dict) and "turns" in data:
        data = data["turns"]
    if not isinstance(data, list):
        raise ValueError("OpenEnv entries are a list of TraceEntry dicts or a TrainingTrace.")
    return [_entry_tokens(_dump(entry)) for entry in data]


def _entry_tokens(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ValueError(f"an OpenEnv trace entry is an object, got {type(entry).__name__}")
    call: dict[str, Any] = {}
    response = entry.get("response") or {}
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        call["reply"] = _text((choices[0].get("message") or {}).get("content"))
    ids = entry.get("completion_token_ids")
    if not ids and entry.get("completion_tokens"):
        matched = [_TOKEN_ID.match(str(t)) for t in entry["completion_tokens"]]
        if all(matched):
            ids = [int(m.group(1)) for m in matched if m]
        else:
            call.update(_none("the OpenEnv capture has token strings but no ids (the engine did not "
                              "return token_id:N)"))
            return call
    if not ids:
        call.update(_none("the OpenEnv capture has no token ids for this call"))
        return call
    logprobs = entry.get("per_token_logps")
    prompt = entry.get("prompt_token_ids")
    call.update(token_source="openenv", completion_token_ids=[int(i) for i in ids],
                prompt_token_ids=[int(i) for i in prompt] if prompt else None)
    if isinstance(logprobs, list) and len(logprobs) == len(ids):
        call["completion_logprobs"] = [float(v) for v in logprobs]
    elif logprobs:
        call["token_note"] = f"{len(logprobs)} logprobs for {len(ids)} ids in the OpenEnv capture: left out"
    mask = entry.get("loss_mask")
    if isinstance(mask, list) and len(mask) == len(prompt or []) + len(ids) and not any(mask[len(prompt or []):]):
        call.pop("completion_logprobs", None)  # OpenEnv zero-fills rejected logprobs: not the model's
        call["token_note"] = "OpenEnv's loss mask excludes this call (its logprobs were rejected on ingest): left out"
    return call


def openenv_record(key: str, episode: dict[str, Any], entries: Any, *, model: Optional[str] = None) -> dict[str, Any]:
    """The trajectory record of an episode played over OpenEnv: the env's side (``episode``:
    ``{env_id, seed, observation0, steps: [{action, observation, reward, terminated, truncated}]}``,
    as the OpenEnv server returned them) joined one to one with OpenEnv's capture of the model
    calls (:func:`openenv_calls`). Raises ``ValueError`` when the counts or fields do not fit."""
    calls = openenv_calls(entries)
    return joined_record(key, episode, calls, agent="openenv", model=model, seconds=0.0)
