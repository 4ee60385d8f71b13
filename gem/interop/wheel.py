"""The running GEM as a wheel, for the packages ``gem export`` writes.

An exported package depends on this GEM (``gem-llm`` at this version), which no package index may
have; so the export carries it: ``vendor/gem_llm-<version>-py3-none-any.whl``, built from the ``gem``
package as imported and ``gem-llm``'s installed metadata (dependencies, extras, entry points).
Installers take it from there (``pip install --find-links vendor``, uv's ``tool.uv.sources``).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import zipfile
from pathlib import Path
from typing import Any, Union

from gem.version import __version__


def build_gem_wheel(directory: Union[str, Path]) -> Path:
    """Write the running GEM (the ``gem`` package as imported, with ``gem-llm``'s installed metadata:
    its dependencies, extras and entry points) as a wheel into ``directory``; returns its path.

    The same source gives the same bytes (sorted entries, fixed timestamps), so a lock that hashes
    the wheel stays valid across exports of the same GEM.
    """
    try:
        dist = importlib.metadata.distribution("gem-llm")
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError("gem-llm's metadata is not installed; install GEM (pip install -e . in the checkout)") from exc
    source = Path(__file__).resolve().parents[1]  # the gem package this module belongs to
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"gem_llm-{__version__}-py3-none-any.whl"
    info = f"gem_llm-{__version__}.dist-info"
    entries: list[tuple[str, bytes]] = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source.parent)
        if path.is_symlink() or not path.is_file() or "__pycache__" in relative.parts or path.suffix in (".pyc", ".pyo"):
            continue
        entries.append((relative.as_posix(), path.read_bytes()))
    entries.append((f"{info}/METADATA", _wheel_metadata(dist.metadata).encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: gem export\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    points = _entry_points(dist)
    if points:
        entries.append((f"{info}/entry_points.txt", points.encode()))
    record = "".join(f"{n},sha256={_digest(d)},{len(d)}\n" for n, d in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            item = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            item.external_attr = 0o644 << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(item, data)
    return wheel


def _wheel_metadata(metadata: Any) -> str:
    lines = ["Metadata-Version: 2.1", "Name: gem-llm", f"Version: {__version__}"]
    for key in ("Summary", "Requires-Python", "License"):
        if metadata.get(key):
            lines.append(f"{key}: {metadata[key]}")
    lines += [f"Provides-Extra: {e}" for e in metadata.get_all("Provides-Extra") or []]
    lines += [f"Requires-Dist: {r}" for r in metadata.get_all("Requires-Dist") or []]
    return "\n".join(lines) + "\n"


def _entry_points(dist: importlib.metadata.Distribution) -> str:
    groups: dict[str, list[str]] = {}
    for point in dist.entry_points:
        groups.setdefault(point.group, []).append(f"{point.name} = {point.value}")
    return "".join(f"[{g}]\n" + "".join(f"{line}\n" for line in lines) + "\n" for g, lines in sorted(groups.items()))


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
