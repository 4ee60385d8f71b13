"""The GGUF conversion cache is keyed by the file's whole content (no torch or model needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gem.rl.models import SOURCE_FILE, gguf_key, resolve_model

SIZE = 20 << 20  # larger than a key made of a file's first and last 8 MiB could cover


def _twin_files(tmp_path: Path) -> tuple[Path, Path]:
    """Two GGUF files of one size, with the same first and last 9 MiB, differing in one middle byte."""
    head, tail = os.urandom(9 << 20), os.urandom(9 << 20)
    middle = bytearray(os.urandom(SIZE - len(head) - len(tail)))
    a, b = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_bytes(head + bytes(middle) + tail)
    middle[len(middle) // 2] ^= 0xFF
    b.write_bytes(head + bytes(middle) + tail)
    assert a.stat().st_size == b.stat().st_size == SIZE
    return a, b


def _fake_checkpoint(cache: Path, gguf: Path) -> Path:
    """What a conversion of ``gguf`` leaves in the cache (only its source record matters here)."""
    target = cache / "models" / gguf_key(gguf)
    target.mkdir(parents=True)
    (target / SOURCE_FILE).write_text(json.dumps({"gguf": str(gguf)}))
    return target


def test_files_that_differ_only_in_the_middle_get_different_keys(tmp_path):
    a, b = _twin_files(tmp_path)
    assert gguf_key(a) != gguf_key(b)
    assert gguf_key(a) == gguf_key(a)
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(a.read_bytes())
    assert gguf_key(copy) == gguf_key(a)  # the same content at another path shares its conversion


def test_a_different_file_of_the_same_size_never_loads_another_files_checkpoint(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GEM_CACHE_DIR", str(cache))
    a, b = _twin_files(tmp_path)
    first = _fake_checkpoint(cache, a)
    second = _fake_checkpoint(cache, b)
    assert Path(resolve_model(str(a))) == first
    assert Path(resolve_model(str(b))) == second
    assert json.loads((Path(resolve_model(str(b.parent))) / SOURCE_FILE).read_text())["gguf"] == str(b)
