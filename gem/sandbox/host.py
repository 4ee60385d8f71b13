"""Which protections a sandboxed run gets on this host: ``python -m gem.sandbox --check``.

:func:`check_host` starts a :class:`~gem.sandbox.sandbox.Sandbox`, runs a probe inside it (its
namespaces, filter, capabilities, quotas, what it can reach) and prints one line per protection,
plus what still holds where one is missing. It returns 1 when a protection that untrusted code
needs is missing.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gem.sandbox.sandbox import Sandbox, SandboxError, default_hidden_paths


def _probe_code(secrets: list[str]) -> str:
    host_ns = {}
    for kind in ("ipc", "mnt", "net", "pid", "uts"):
        try:
            host_ns[kind] = os.stat(f"/proc/self/ns/{kind}").st_ino
        except OSError:
            host_ns[kind] = -1
    return f"""
import json, os, resource
out = {{}}
pids = [p for p in os.listdir('/proc') if p.isdigit()]
out['pid_namespace'] = pids == ['1'] or (len(pids) == 1 and int(pids[0]) == os.getpid())
for kind, ino in {host_ns!r}.items():
    out[kind + '_ns'] = os.stat(f'/proc/self/ns/{{kind}}').st_ino != ino
with open('/proc/self/status') as fh:
    status = dict(line.split(':', 1) for line in fh if ':' in line)
out['seccomp'] = status.get('Seccomp', '').strip() == '2'
out['no_capabilities'] = int(status.get('CapEff', '1').strip(), 16) == 0
out['no_new_privileges'] = status.get('NoNewPrivs', '').strip() == '1'
try:
    import socket
    socket.create_connection(('1.1.1.1', 53), timeout=1)
    out['network_isolated'] = False
except OSError:
    out['network_isolated'] = True
st = os.statvfs('/tmp')
out['tmp_quotas'] = st.f_files <= 10**6 and st.f_blocks * st.f_frsize <= 64 << 30
try:
    open('/etc/gem-sandbox-check', 'w')
    out['readonly_fs'] = False
except OSError:
    out['readonly_fs'] = True
out['hidden_paths'] = not any(os.path.lexists(p) for p in {secrets!r})
limits = (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE)
out['rlimits_hard'] = all(resource.getrlimit(r)[0] == resource.getrlimit(r)[1] for r in limits)
try:
    import ctypes
    out['user_namespaces_refused'] = ctypes.CDLL(None).unshare(0x10000000) != 0
except OSError:
    out['user_namespaces_refused'] = True
refused = []
for family in (40, 17, 16, 31, 38):  # AF_VSOCK, AF_PACKET, AF_NETLINK, AF_BLUETOOTH, AF_ALG
    try:
        socket.socket(family, socket.SOCK_STREAM if family == 40 else socket.SOCK_RAW).close()
    except OSError as exc:
        refused.append(exc.errno == 97)
    else:
        refused.append(False)
out['socket_families_refused'] = all(refused)
libc = ctypes.CDLL(None, use_errno=True)
out['sysv_ipc_refused'] = libc.shmget(0, 4096, 0o600) == -1 and ctypes.get_errno() == 1
print(json.dumps(out))
"""


def _hidden_markers(hidden: list[str]) -> list[str]:
    """Paths a run must not see: each hidden file, and entries of each hidden directory other
    than those on the way to the interpreter's modules (which are bound back)."""
    import site

    roots = [*sys.path, sys.prefix, sys.base_prefix, *site.getsitepackages()]
    keep = {os.path.realpath(p) for p in roots if p}
    markers = []
    for path in hidden:
        if not os.path.isdir(path):
            markers.append(path)
            continue
        try:
            names = sorted(os.listdir(path))[:50]
        except OSError:
            continue
        for name in names:
            entry = os.path.join(path, name)
            if not any(k == entry or k.startswith(entry + "/") for k in keep):
                markers.append(entry)
    return markers


def _what_holds(info: dict[str, Any]) -> list[str]:
    """What the limits mean on this host (with cgroups or without)."""
    if info.get("mode") == "unsafe":
        return ["memory_mb and max_processes are rlimits of each process (unsafe mode: nothing more)"]
    if info.get("cgroups"):
        lines = [
            f"memory_mb caps the run's processes together (cgroup v{info['cgroups']}), also as each "
            "process's address space; an out-of-memory kill ends the whole run (reason 'memory')",
            "max_processes caps the run's processes and threads together (pids cgroup)",
        ]
        lines.append(
            "socket buffers and other kernel memory count against memory_mb"
            if info.get("cgroup_socket_memory")
            else "kernel memory counts against memory_mb; TCP buffers are not capped separately"
        )
        lines.append(
            "between a session's cells every process of it is frozen (cgroup freezer)"
            if info.get("cgroup_freezer")
            else "between a session's cells only its kernel process is stopped (no freezer)"
        )
        return lines
    per_uid = (
        "each run has a uid of its own, so it caps the run"
        if info.get("drop_privileges")
        else "runs share a uid (or run as uid 0, exempt), so it is no per-run cap"
    )
    return [
        "no cgroups: memory_mb caps each process's address space (RLIMIT_AS), not their sum; "
        "a run's socket buffers count against nothing",
        f"no cgroups: max_processes is RLIMIT_NPROC, counted per uid: {per_uid}",
        "no cgroups: between a session's cells only its kernel process is stopped (SIGSTOP); "
        "other processes of the session (a cell can leave some running: it can write its own end's report) "
        "run until the next cell ends",
    ]


def check_host(stream: Any = None, cgroups: bool = True) -> int:
    """Print which protections a run gets on this host; return 0 if untrusted code may run here,
    1 if it would be refused (or is only allowed through the unsafe mode). ``cgroups=False``
    shows what holds without cgroups."""
    out = stream or sys.stdout
    try:
        box = Sandbox(unsafe=False, cgroups=cgroups)
        result = box.run(_probe_code(_hidden_markers(default_hidden_paths())), timeout=20)
    except SandboxError as exc:
        print(f"REFUSED: {exc}", file=out)
        return 1
    try:
        probe = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"the probe run failed: {result.stderr.strip()[-500:]}", file=out)
        box.close()
        return 1
    info = box.isolation
    box.close()
    # (name, shown value, present, required for untrusted code)
    rows = [
        ("pid namespace (own /proc)", probe["pid_namespace"] and probe["pid_ns"], True),
        ("ipc namespace", probe["ipc_ns"], True),
        ("network namespace (no network)", probe["net_ns"] and probe["network_isolated"], True),
        ("mount namespace (read-only view)", probe["mnt_ns"] and probe["readonly_fs"], True),
        ("seccomp filter", probe["seccomp"], True),
        ("no capabilities, no new privileges", probe["no_capabilities"] and probe["no_new_privileges"], True),
        ("user namespaces refused to runs", probe["user_namespaces_refused"], True),
        ("uid separation per run (root only)", bool(info.get("drop_privileges")), False),
        ("/tmp quotas (bytes, inodes)", probe["tmp_quotas"] and bool(info.get("tmp_quota")), True),
        ("hidden paths", probe["hidden_paths"], True),
        ("hard rlimits", probe["rlimits_hard"], True),
        ("socket families (AF_UNIX only)", probe["socket_families_refused"], True),
        ("System V IPC refused", probe["sysv_ipc_refused"], True),
        (f"cgroups for the whole run (v{info.get('cgroups') or '-'})", bool(info.get("cgroups")), False),
        ("memory limit over all its processes", bool(info.get("cgroups")), False),
        ("socket buffers count as memory", bool(info.get("cgroup_socket_memory")), False),
        ("process limit over the whole run", bool(info.get("cgroups")), False),
        ("sessions frozen whole between cells", bool(info.get("cgroup_freezer")), False),
    ]
    print(f"{'':8}{'mode':<40}{info.get('mode')}", file=out)
    failed = False
    for name, present, required in rows:
        failed |= required and not present
        mark = "ok" if present else ("MISSING" if required else "no")
        print(f"{mark:<8}{name:<40}{present}", file=out)
    print(f"{'':8}{'hidden':<40}{', '.join(info.get('hidden', []))}", file=out)
    for note in info.get("notes", []):
        print(f"note    {note}", file=out)
    for line in _what_holds(info):
        print(f"holds   {line}", file=out)
    print("untrusted code: " + ("REFUSED (a protection is missing)" if failed else "allowed"), file=out)
    return 1 if failed else 0


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gem.sandbox", description="GEM's Python sandbox.")
    parser.add_argument("--check", action="store_true", help="print which protections this host provides")
    parser.add_argument(
        "--no-cgroups", action="store_true", help="with --check: as a sandbox without cgroups (Sandbox(cgroups=False))"
    )
    args = parser.parse_args(argv)
    if args.check:
        return check_host(cgroups=not args.no_cgroups)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
