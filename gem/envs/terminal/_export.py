"""Export a workspace as a tar, whatever the agent left in it. Runs INSIDE the sandbox.

:mod:`gem.envs.terminal.env` sends this source into the agent's session when the episode ends,
and the verification harness carries it too (an exported Harbor task grades ``/app`` with it).
Standard library only; every name starts with ``_gem`` (it shares a namespace with the shell
runtime).

What goes in: regular files (with their modes), directories and symbolic links (kept as links,
never followed). What stays out, each named in the ``skipped`` list that comes back: sockets,
fifos, device nodes, a single file larger than the limit (a huge sparse file), entries nested
deeper than :data:`_GEM_EXPORT_MAX_DEPTH` directories or with paths longer than
:data:`_GEM_EXPORT_MAX_PATH` bytes, and entries that cannot be read. Only a workspace whose
exportable content is larger than the limit as a whole is refused (``OverflowError``).
"""

import base64 as _gem_x_base64
import io as _gem_x_io
import json as _gem_x_json
import os as _gem_x_os
import stat as _gem_x_stat
import tarfile as _gem_x_tarfile

_GEM_EXPORT_MAX_DEPTH = 100
_GEM_EXPORT_MAX_PATH = 2048
_GEM_EXPORT_MAX_LISTED = 50
_GEM_EXPORT_ENTRY_COST = 1024  # what a tar header costs (counted against the limit: many empty files add up)


def _gem_special_kind(mode: int) -> str:
    if _gem_x_stat.S_ISSOCK(mode):
        return "a socket"
    if _gem_x_stat.S_ISFIFO(mode):
        return "a fifo"
    if _gem_x_stat.S_ISCHR(mode) or _gem_x_stat.S_ISBLK(mode):
        return "a device node"
    return "a special file"


def _gem_export(root: str, limit: int) -> tuple:
    """``(tar bytes, skipped)`` of the tree under ``root``; ``OverflowError`` past ``limit`` bytes."""
    buf = _gem_x_io.BytesIO()
    skipped = []
    total = 0

    def skip(rel: str, why: str) -> None:
        skipped.append(f"{rel} ({why})")

    stack = [("", 0)]
    with _gem_x_tarfile.open(fileobj=buf, mode="w", format=_gem_x_tarfile.PAX_FORMAT) as tar:
        while stack:
            rel_dir, depth = stack.pop()
            full_dir = _gem_x_os.path.join(root, rel_dir) if rel_dir else root
            try:
                with _gem_x_os.scandir(full_dir) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                skip(rel_dir or ".", f"unreadable directory: {exc.strerror}")
                continue
            subdirs = []
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    skip(rel, f"unreadable: {exc.strerror}")
                    continue
                if len(_gem_x_os.fsencode(rel)) > _GEM_EXPORT_MAX_PATH:
                    skip(rel[:200] + "...", f"path longer than {_GEM_EXPORT_MAX_PATH} bytes")
                    continue
                info = _gem_x_tarfile.TarInfo(rel)
                info.mode = st.st_mode & 0o7777
                info.mtime = int(st.st_mtime) if st.st_mtime > 0 else 0
                mode = st.st_mode
                if _gem_x_stat.S_ISLNK(mode):
                    try:
                        info.linkname = _gem_x_os.readlink(entry.path)
                    except OSError as exc:
                        skip(rel, f"unreadable link: {exc.strerror}")
                        continue
                    info.type = _gem_x_tarfile.SYMTYPE
                    data = None
                elif _gem_x_stat.S_ISDIR(mode):
                    if depth + 1 > _GEM_EXPORT_MAX_DEPTH:
                        skip(rel, f"nested deeper than {_GEM_EXPORT_MAX_DEPTH} directories")
                        continue
                    info.type = _gem_x_tarfile.DIRTYPE
                    data = None
                    subdirs.append((rel, depth + 1))
                elif _gem_x_stat.S_ISREG(mode):
                    if st.st_size > limit:
                        skip(rel, f"{st.st_size} bytes, larger than the {limit}-byte limit")
                        continue
                    try:
                        fd = _gem_x_os.open(entry.path, _gem_x_os.O_RDONLY | _gem_x_os.O_NOFOLLOW | _gem_x_os.O_NONBLOCK)
                        with _gem_x_os.fdopen(fd, "rb") as fh:
                            data = fh.read(limit + 1)
                    except OSError as exc:
                        skip(rel, f"unreadable: {exc.strerror}")
                        continue
                    if len(data) > limit:
                        skip(rel, f"more than the {limit}-byte limit")
                        continue
                    info.size = len(data)
                else:
                    skip(rel, _gem_special_kind(mode))
                    continue
                total += _GEM_EXPORT_ENTRY_COST + (len(data) if data is not None else 0)
                if total > limit:
                    raise OverflowError(f"the workspace holds more than {limit} bytes")
                if data is None:
                    tar.addfile(info)
                else:
                    tar.addfile(info, _gem_x_io.BytesIO(data))
            stack.extend(reversed(subdirs))
    if len(skipped) > _GEM_EXPORT_MAX_LISTED:
        skipped = skipped[:_GEM_EXPORT_MAX_LISTED] + [f"... and {len(skipped) - _GEM_EXPORT_MAX_LISTED} more"]
    return buf.getvalue(), skipped


def _gem_export_json(root: str, limit: int) -> str:
    """JSON ``{"tar": base64, "skipped": [...]}``, or ``{"error": "..."}``."""
    try:
        data, skipped = _gem_export(root, limit)
    except (OSError, OverflowError, ValueError) as exc:
        return _gem_x_json.dumps({"error": str(exc)})
    return _gem_x_json.dumps({"tar": _gem_x_base64.b64encode(data).decode("ascii"), "skipped": skipped})
