"""Reading a search corpus: one JSON object per line with ``id``, ``title`` and ``text``.

Search-R1 corpora (one ``contents`` field holding ``"Title"\\ntext``) are read too. Every document
comes out as a dict with ``id``, ``title``, ``text`` and ``contents`` (the Search-R1 field that
clients format from).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

PathLike = Union[str, Path]


def make_contents(title: str, text: str) -> str:
    """The Search-R1 ``contents`` string: the quoted title on the first line, then the text."""
    return f'"{title}"\n{text}'


def normalize_document(raw: dict[str, Any], line_number: int = 0) -> dict[str, str]:
    """A corpus row as ``{id, title, text, contents}``; raises ``ValueError`` saying what is missing."""
    if not isinstance(raw, dict):
        raise ValueError(f"line {line_number}: a document is a JSON object, got {type(raw).__name__}.")
    if "text" in raw or "title" in raw:
        title, text = str(raw.get("title", "")), str(raw.get("text", ""))
    elif "contents" in raw:
        first, _, rest = str(raw["contents"]).partition("\n")
        title, text = first.strip().strip('"'), rest
    else:
        raise ValueError(
            f"line {line_number}: a document needs 'title' and 'text' (or Search-R1's 'contents'); "
            f"got keys {sorted(raw)}."
        )
    doc_id = str(raw.get("id", raw.get("_id", line_number - 1)))
    return {"id": doc_id, "title": title, "text": text, "contents": make_contents(title, text)}


def iter_corpus(path: PathLike) -> Iterator[dict[str, str]]:
    """The documents of a JSONL corpus, normalized (blank lines skipped)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Corpus file {str(path)!r} does not exist; pass a JSONL file of id/title/text.")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg}).") from exc
            yield normalize_document(raw, number)


def load_corpus(path: PathLike) -> list[dict[str, str]]:
    """All documents of a JSONL corpus; an empty corpus is an error."""
    docs = list(iter_corpus(path))
    if not docs:
        raise ValueError(f"Corpus file {str(path)!r} holds no documents.")
    return docs


def write_corpus(docs: Iterable[dict[str, Any]], path: PathLike) -> int:
    """Write documents as JSONL (``id``, ``title``, ``text``); returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for doc in docs:
            row = {"id": str(doc["id"]), "title": doc["title"], "text": doc["text"]}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def searchable_text(doc: dict[str, str]) -> str:
    """What a retriever indexes: title and text together."""
    return f"{doc['title']}\n{doc['text']}"
