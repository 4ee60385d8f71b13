"""Code that runs INSIDE the sandbox: the persistent shell of a session and archive helpers.

This module is not imported by the library at run time: :mod:`gem.tools.bash_tool` sends its
source text into a :class:`~gem.sandbox.SandboxSession` once per episode (the first cell),
and the verification harness of :mod:`gem.envs.terminal` prepends it to its own code. It uses
only the standard library and keeps everything it defines under the ``_gem`` prefix, so the cells
that follow call ``_gem_run(...)``, ``_gem_archive()`` and so on.

The shell is "persistent" without a long-lived bash process (the sandbox may stop background
processes between cells): each command runs in a fresh ``bash`` that first restores the working
directory, the variables (exported or not), functions and aliases the previous command left, and
saves them again when it exits (an ``EXIT`` trap). Output goes to a file, not a pipe, so a
background job that keeps the descriptor open cannot stall the call; after each command every
process it left behind is killed, so nothing runs between two commands.
"""

import base64
import ctypes
import io
import json
import os
import signal
import stat
import subprocess
import tarfile
import time

_GEM_BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "dumb",
    "PYTHONDONTWRITEBYTECODE": "1",
}
_GEM_SKIP_VARS = (
    "BASH*|EUID|PPID|UID|SHELLOPTS|FUNCNAME|GROUPS|DIRSTACK|PIPESTATUS|HISTCMD|LINENO|RANDOM|SECONDS"
    "|SRANDOM|EPOCHREALTIME|EPOCHSECONDS|COMP_*|OPTERR|OPTIND|_|__gem*|__GEM*|PWD|OLDPWD|SHLVL"
)
# Run as: bash --noprofile --norc -c WRAPPER gem STATE_DIR COMMAND
_GEM_WRAPPER = r"""
__GEM_STATE=$1; __gem_cmd=$2; shift 2
__gem_save() {
  __gem_status=$?
  trap - EXIT
  {
    builtin printf '%s' "$PWD" > "$__GEM_STATE/cwd"
    builtin compgen -v > "$__GEM_STATE/names"
    builtin mapfile -t __gem_names < "$__GEM_STATE/names"
    {
      for __gem_v in "${__gem_names[@]}"; do
        case $__gem_v in SKIPPED) continue;; esac
        builtin declare -p "$__gem_v"
      done
      builtin declare -f
      builtin alias -p
    } > "$__GEM_STATE/vars"
  } 2>/dev/null
  builtin exit $__gem_status
}
builtin source "$__GEM_STATE/vars" 2>/dev/null
builtin read -r __gem_cwd < "$__GEM_STATE/cwd"
builtin cd -- "$__gem_cwd" 2>/dev/null || builtin cd -- "$HOME"
trap __gem_save EXIT
shopt -s expand_aliases
builtin eval "$__gem_cmd"
""".replace("SKIPPED", _GEM_SKIP_VARS)

_gem = {}


def _gem_init(workspace: str, max_output: int) -> None:
    """Create the workspace and the shell's state; make this process undumpable (no ptrace,
    no /proc/<pid>/mem for the commands it runs). ``stdin`` may carry a tar of initial files."""
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass
    # A command may signal this process (pid 1 of the session, its parent): the only signal it
    # handles is SIGINT (Python's KeyboardInterrupt), which would end the cell in the middle of
    # a command, skip its clean-up, and lose the session with its workspace. A handler that does
    # nothing keeps it (commands still get SIGINT's default: exec resets handlers).
    signal.signal(signal.SIGINT, _gem_ignore_signal)
    home = os.getcwd()
    ws = os.path.join(home, workspace)
    state = os.path.join(home, ".gem-shell")
    os.makedirs(ws, exist_ok=True)
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, "cwd"), "w") as fh:
        fh.write(ws)
    open(os.path.join(state, "vars"), "w").close()
    _gem.update(home=home, ws=ws, state=state, max_output=max_output, out=os.path.join(state, "out"))
    _gem["env"] = dict(_GEM_BASE_ENV, HOME=ws, TMPDIR=os.path.join(home, ".gem-tmp"))
    os.makedirs(_gem["env"]["TMPDIR"], exist_ok=True)
    _gem["kill_all"] = _gem_may_kill_all()


def _gem_ignore_signal(signum, frame) -> None:
    """A handler that does nothing (unlike SIG_IGN, it is not inherited by the commands)."""


def _gem_may_kill_all() -> bool:
    """``kill(-1)`` is safe when this process is alone with its uid or its PID namespace."""
    if os.getpid() == 1:
        return True
    try:
        return os.stat(f"/proc/{os.getppid()}").st_uid != os.getuid()
    except OSError:
        return False


def _gem_reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _gem_cleanup(pgid: int) -> None:
    """Kill whatever the last command left running and reap it (this may be PID 1).

    Killed processes hold their slot of the process limit until they are gone, and the next
    command must not start while a fork bomb is still dying: so this waits (at most 2 s) until
    the command's process group is empty, killing again meanwhile. With ``kill_all`` each round
    also kills every other process of this uid or PID namespace (those that left the group).
    """
    deadline = time.monotonic() + 2.0
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:  # ESRCH: the group is gone (all exited and reaped)
            pgid = 0
        if _gem.get("kill_all"):
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        _gem_reap()
        if not pgid or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def _gem_read_output(path: str, limit: int) -> tuple:
    """``(text, total bytes, truncated)``: head and tail of the output file around a marker."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return "", 0, False
    with open(path, "rb") as fh:
        if size <= limit:
            data = fh.read()
            return data.decode("utf-8", "replace"), size, False
        head = fh.read(limit * 2 // 3)
        fh.seek(size - (limit - len(head)))
        tail = fh.read()
    cut = size - len(head) - len(tail)
    text = (
        head.decode("utf-8", "replace")
        + f"\n[... {cut} bytes of output truncated ...]\n"
        + tail.decode("utf-8", "replace")
    )
    return text, size, True


def _gem_run(command: str, timeout: float) -> str:
    """Run ``command`` in the persistent shell; JSON with output, exit code, timing."""
    start = time.monotonic()
    out_path = _gem["out"]
    timed_out = False
    try:
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc", "-c", _GEM_WRAPPER, "gem", _gem["state"], command],
                cwd=_gem["ws"],
                env=_gem["env"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            code = proc.wait()  # its own status first: the clean-up below reaps whatever is left
        _gem_cleanup(proc.pid)
    except (OSError, ValueError) as exc:  # an unrunnable command line (e.g. a NUL byte)
        return json.dumps({"output": f"cannot run this command: {exc}", "exit_code": 126, "timed_out": False,
                           "truncated": False, "bytes": 0, "seconds": time.monotonic() - start})
    text, size, truncated = _gem_read_output(out_path, _gem["max_output"])
    try:
        os.unlink(out_path)
    except OSError:
        pass
    return json.dumps(
        {"output": text, "exit_code": code, "timed_out": timed_out, "truncated": truncated, "bytes": size,
         "seconds": time.monotonic() - start}
    )


# ------------------------------------------------------------------ archives
def _gem_tar(root: str, limit: int) -> bytes:
    """A tar of ``root``'s contents (links kept as links, never followed); raises past ``limit`` bytes."""
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                try:
                    info = tar.gettarinfo(full, arcname=rel)
                except OSError:
                    continue
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if info.isfile():
                    total += info.size
                    if total > limit:
                        raise OverflowError(f"the workspace holds more than {limit} bytes")
                    try:
                        with open(full, "rb") as fh:
                            tar.addfile(info, fh)
                    except OSError:
                        continue
                elif info.isdir() or info.issym():
                    tar.addfile(info)
                # devices, fifos, sockets and hard-link duplicates are left out
    return buf.getvalue()


def _gem_inside(root: str, path: str) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def _gem_extract(data: bytes, dest: str) -> None:
    """Unpack a tar into ``dest`` keeping modes; names outside ``dest`` (absolute, ``..``, through
    a link) are skipped. Symbolic links are recreated as they are (readers check where they point)."""
    os.makedirs(dest, exist_ok=True)
    dirs = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            name = member.name.lstrip("/")
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if not parts or ".." in parts:
                continue
            target = os.path.join(dest, *parts)
            if not _gem_inside(dest, os.path.dirname(target)):
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            mode = member.mode & 0o7777 & ~(stat.S_ISUID | stat.S_ISGID)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                dirs.append((target, mode))
                continue
            if os.path.lexists(target) and not os.path.isdir(target):
                os.unlink(target)
            if member.issym():
                os.symlink(member.linkname, target)
            elif member.isfile():
                src = tar.extractfile(member)
                with open(target, "wb") as fh:
                    while True:
                        chunk = src.read(1 << 20)
                        if not chunk:
                            break
                        fh.write(chunk)
                os.chmod(target, mode)
    for target, mode in reversed(dirs):
        try:
            os.chmod(target, mode | stat.S_IRWXU)  # the owner keeps access to its own tree
            if mode != mode | stat.S_IRWXU:
                os.chmod(target, mode)
        except OSError:
            pass


def _gem_wipe(root: str) -> None:
    """Remove everything under ``root`` (links removed, never followed), read-only directories too."""
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                try:
                    os.chmod(full, 0o700)
                except OSError:
                    pass
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames + dirnames:
            full = os.path.join(dirpath, name)
            try:
                if os.path.isdir(full) and not os.path.islink(full):
                    os.rmdir(full)
                else:
                    os.unlink(full)
            except OSError:
                pass


def _gem_load(data: bytes) -> None:
    """Replace the workspace with the files of a tar (``data``)."""
    _gem_wipe(_gem["ws"])
    _gem_extract(data, _gem["ws"])


def _gem_archive(limit: int) -> str:
    """The workspace as base64 tar, or ``ERROR: ...``."""
    try:
        return base64.b64encode(_gem_tar(_gem["ws"], limit)).decode("ascii")
    except (OSError, OverflowError) as exc:
        return f"ERROR: {exc}"


def _gem_get_shell_state() -> str:
    out = {}
    for name in ("cwd", "vars"):
        try:
            with open(os.path.join(_gem["state"], name), "rb") as fh:
                out[name] = base64.b64encode(fh.read()).decode("ascii")
        except OSError:
            out[name] = ""
    out["cwd_rel"] = os.path.relpath(base64.b64decode(out["cwd"]).decode("utf-8", "replace") or _gem["ws"], _gem["ws"])
    return json.dumps(out)


def _gem_set_shell_state(state: dict) -> None:
    with open(os.path.join(_gem["state"], "vars"), "wb") as fh:
        fh.write(base64.b64decode(state.get("vars", "")))
    cwd = os.path.normpath(os.path.join(_gem["ws"], state.get("cwd_rel", ".")))
    with open(os.path.join(_gem["state"], "cwd"), "w") as fh:
        fh.write(cwd)


# ------------------------------------------------------------------ file editing (the editor tool)
def _gem_edit_path(path: str) -> str:
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ValueError("a path is required")
    cwd = _gem_shell_cwd()
    full = os.path.normpath(os.path.join(cwd, path))
    if not _gem_inside(_gem["ws"], full):
        raise ValueError(f"{path} is outside the workspace")
    return full


def _gem_shell_cwd() -> str:
    try:
        with open(os.path.join(_gem["state"], "cwd")) as fh:
            cwd = fh.read()
    except OSError:
        cwd = ""
    return cwd if cwd and _gem_inside(_gem["ws"], cwd) else _gem["ws"]


def _gem_numbered(text: str, start: int) -> str:
    return "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(text.splitlines(), start))


def _gem_edit(request: str) -> str:
    """One editor operation (JSON ``{"op": view|str_replace|create|insert, ...}``); text result,
    ``ERROR: ...`` when it cannot be done."""
    try:
        req = json.loads(request)
        op = req.get("op")
        full = _gem_edit_path(req.get("path"))
        rel = os.path.relpath(full, _gem["ws"])
        if op == "view":
            if os.path.isdir(full):
                out = []
                for dirpath, dirnames, filenames in os.walk(full):
                    depth = os.path.relpath(dirpath, full).count(os.sep) + (dirpath != full)
                    dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if depth < 2 else []
                    for name in sorted(dirnames) + sorted(f for f in filenames if not f.startswith(".")):
                        p = os.path.relpath(os.path.join(dirpath, name), _gem["ws"])
                        out.append(p + ("/" if os.path.isdir(os.path.join(dirpath, name)) else ""))
                return f"Files under {rel} (2 levels):\n" + "\n".join(out[:500])
            with open(full, encoding="utf-8", errors="replace") as fh:
                text = fh.read(4 << 20)
            lines = text.splitlines(True)
            lo, hi = 1, len(lines)
            rng = req.get("view_range")
            if rng:
                lo, hi = int(rng[0]), int(rng[1])
                hi = len(lines) if hi == -1 else min(hi, len(lines))
                if lo < 1 or lo > max(1, len(lines)) or hi < lo:
                    raise ValueError(f"view_range {rng} is outside 1..{len(lines)}")
            shown = "".join(lines[lo - 1:hi])
            body = _gem_numbered(shown, lo)
            if len(body) > _gem["max_output"]:
                body = body[: _gem["max_output"]] + "\n[... truncated: use view_range to see more ...]\n"
            return f"{rel} (lines {lo}-{hi} of {len(lines)}):\n{body}"
        if op == "create":
            text = req.get("file_text")
            if not isinstance(text, str):
                raise ValueError("create needs file_text")
            os.makedirs(os.path.dirname(full), exist_ok=True)
            if not _gem_inside(_gem["ws"], os.path.dirname(full)):
                raise ValueError(f"{req['path']} is outside the workspace")
            existed = os.path.exists(full)
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)
            return f"{'Overwrote' if existed else 'Created'} {rel} ({len(text.splitlines())} lines)."
        if op in ("str_replace", "insert"):
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
            if op == "str_replace":
                old, new = req.get("old_str"), req.get("new_str", "")
                if not isinstance(old, str) or not old or not isinstance(new, str):
                    raise ValueError("str_replace needs a non-empty old_str and a new_str")
                count = text.count(old)
                if count != 1:
                    raise ValueError(f"old_str occurs {count} times in {rel}; it must occur exactly once "
                                     "(add surrounding lines to make it unique)")
                at = text.index(old)
                text = text[:at] + new + text[at + len(old):]
                first = text[:at].count("\n") + 1
                span = new.count("\n") + 1
            else:
                line, new = int(req.get("insert_line", -1)), req.get("new_str", "")
                lines = text.splitlines(True)
                if not 0 <= line <= len(lines) or not isinstance(new, str):
                    raise ValueError(f"insert_line must be within 0..{len(lines)}")
                if new and not new.endswith("\n"):
                    new += "\n"
                text = "".join(lines[:line]) + new + "".join(lines[line:])
                first, span = line + 1, new.count("\n")
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)
            lines = text.splitlines(True)
            lo = max(1, first - 3)
            hi = min(len(lines), first + span + 3)
            return f"Edited {rel}. Lines {lo}-{hi} now:\n" + _gem_numbered("".join(lines[lo - 1:hi]), lo)
        raise ValueError(f"unknown operation {op!r}")
    except (OSError, ValueError, TypeError, UnicodeDecodeError) as exc:
        return f"ERROR: {exc}"
