"""The sandbox worker's source and what the caller hands it: the parts concatenated into one code
object (gem/sandbox/_worker_source.py), the seccomp filter built on the caller's side
(gem/sandbox/seccomp.py) and the wire format both sides share (gem/sandbox/wire.py)."""

import builtins
import errno
import json
import os
import subprocess
import sys
import symtable

import pytest

from gem.sandbox import _worker_source, _zygote, sandbox, seccomp, wire
from gem.sandbox.sandbox import Sandbox, SandboxLimits

SANDBOX_DIR = os.path.dirname(os.path.abspath(sandbox.__file__))


# ------------------------------------------------------------------ the parts
def test_every_worker_part_is_listed_once_and_exists():
    parts = _worker_source.PARTS
    assert len(set(parts)) == len(parts)
    on_disk = {n for n in os.listdir(SANDBOX_DIR) if n.startswith("_zygote_") and n.endswith(".py")}
    assert on_disk == {p for p in parts if p.startswith("_zygote_")}, "a _zygote_*.py file that is not a part"
    assert parts[0] == "wire.py"  # (the caller's framing, first: the others use it at import time)


def test_the_source_is_the_parts_in_order_behind_one_future_line():
    source = _worker_source.worker_source()
    assert source.startswith("from __future__ import annotations\n")
    assert source.count("from __future__ import") == 1
    at = 0
    for name in _worker_source.PARTS:
        with open(os.path.join(SANDBOX_DIR, name), encoding="utf-8") as fh:
            text = fh.read()
        found = source.find(text, at)
        assert found >= at, name  # whole, and after the part before it
        at = found + len(text)


def test_a_part_with_its_own_future_import_is_refused(tmp_path, monkeypatch):
    for name in _worker_source.PARTS:
        (tmp_path / name).write_text("X = 1\n")
    (tmp_path / "_zygote_child.py").write_text('"""doc"""\n\nfrom __future__ import annotations\n')
    monkeypatch.setattr(_worker_source, "_HERE", str(tmp_path))
    with pytest.raises(ValueError, match="_zygote_child.py"):
        _worker_source.worker_source()


def test_the_worker_is_one_code_object_and_the_module_runs_it():
    code = _worker_source.worker_code()
    assert code.co_filename == "<gem-sandbox-worker>"  # never a path: a run must not learn it
    for obj in (_zygote.Cgroups.slot, _zygote.Zygote.serve, _zygote.RunChild.child, _zygote.spin_until,
                _zygote._install_seccomp, _zygote._host_view, _zygote.main):
        assert obj.__code__.co_filename == code.co_filename, obj
    assert issubclass(_zygote.Zygote, _zygote.RunChild)
    assert _zygote.HEADER.format == wire.HEADER.format and _zygote.MAX_FDS == wire.MAX_FDS


def test_every_name_a_part_uses_is_defined_by_some_part():
    """The parts share one namespace, so a linter reading one part alone cannot tell a typo from
    another part's name: this checks the assembled source instead (every global name read in a
    function or class is defined at module level, or is a builtin)."""
    source = _worker_source.worker_source()
    namespace = {"__name__": "gem_worker_check"}
    exec(_worker_source.worker_code(), namespace)
    missing = []

    def walk(table: symtable.SymbolTable) -> None:
        for child in table.get_children():
            for sym in child.get_symbols():
                if sym.is_referenced() and (sym.is_global() or sym.is_declared_global()):
                    name = sym.get_name()
                    if name not in namespace and not hasattr(builtins, name):
                        missing.append(f"{child.get_name()} (line {child.get_lineno()}): {name}")
            walk(child)

    walk(symtable.symtable(source, "<gem-sandbox-worker>", "exec"))
    assert not missing, missing


def test_a_worker_line_maps_back_to_its_part():
    source = _worker_source.worker_source().split("\n")
    needles = ("class Cgroups:", "def _host_view(", "HEADER = struct.Struct(", "class RunChild:", "def main()")
    for needle in needles:
        lineno = next(i + 1 for i, line in enumerate(source) if line.startswith(needle))
        path, line = _worker_source.part_of_line(lineno)
        with open(os.path.join(os.path.dirname(SANDBOX_DIR), "..", path), encoding="utf-8") as fh:
            assert fh.read().split("\n")[line - 1].startswith(needle), (needle, path, line)
    with pytest.raises(ValueError):
        _worker_source.part_of_line(2)  # the blank line before the first part's marker


def test_sandbox_module_loaded_from_its_file_alone_finds_its_siblings():
    """A host may run gem/sandbox/sandbox.py with a Python where ``gem`` is not importable (the
    non-root test does, as another user): it loads wire, seccomp and the worker's source from
    the files beside it."""
    script = (
        "import importlib.util, json, sys\n"
        "spec = importlib.util.spec_from_file_location('alone', sys.argv[1])\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "sys.modules[spec.name] = mod\n"
        "spec.loader.exec_module(mod)\n"
        "try:\n"
        "    import gem\n"
        "    gem_importable = True\n"
        "except ImportError:\n"
        "    gem_importable = False\n"
        "print(json.dumps({'gem': gem_importable, 'header': mod._HEADER.format,\n"
        "                  'file': mod.worker_code().co_filename,\n"
        "                  'seccomp': mod.seccomp.worker_settings(True)['seccomp']}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, sandbox.__file__],
        capture_output=True, text=True, timeout=60, cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["gem"] is False  # (-I -S: not even the editable install's finder)
    assert out["header"] == wire.HEADER.format and out["file"] == "<gem-sandbox-worker>"
    assert out["seccomp"] == seccomp.worker_settings(True)["seccomp"]


# ------------------------------------------------------------------ the filter, built here
@pytest.mark.parametrize("machine", sorted(seccomp.SYSCALLS))
def test_the_filter_is_whole_instructions_and_differs_with_the_network(machine):
    isolated = seccomp.build_filter(machine)
    networked = seccomp.build_filter(machine, seccomp.NETWORK_FAMILIES)
    for program in (isolated, networked):
        assert program and len(program) % 8 == 0 and len(program) // 8 <= 4096  # BPF_MAXINSNS
    assert isolated != networked
    assert seccomp.build_filter(machine, seccomp.ISOLATED_FAMILIES) == isolated


def test_worker_settings_carry_the_filter_for_the_configuration_and_capset():
    for machine, capset in (("x86_64", 126), ("aarch64", 91)):
        off = seccomp.worker_settings(True, machine)
        on = seccomp.worker_settings(False, machine)
        assert bytes.fromhex(off["seccomp"]) == seccomp.build_filter(machine, seccomp.ISOLATED_FAMILIES)
        assert bytes.fromhex(on["seccomp"]) == seccomp.build_filter(machine, seccomp.NETWORK_FAMILIES)
        assert off["capset"] == on["capset"] == capset
    assert seccomp.worker_settings(True, "sparc") == {"seccomp": None, "capset": None}
    assert seccomp.syscall_number("capset", "sparc") is None
    assert seccomp.syscall_number("no_such_call", "x86_64") is None


def test_the_old_names_of_the_filter_still_import():
    assert _zygote._seccomp_program is seccomp.build_filter and _zygote._SYSCALLS is seccomp.SYSCALLS
    assert _zygote.DENIED_SYSCALLS is seccomp.DENIED_SYSCALLS
    from gem.utils import _sandbox_zygote

    assert _sandbox_zygote is _zygote


@pytest.mark.skipif(seccomp.build_filter() is None, reason="no seccomp table for this architecture")
def test_runs_get_the_filter_the_caller_sends(monkeypatch):
    """The worker attaches the bytes it is sent: a filter that allows no socket family at all
    (built here) refuses the unix socket the default filter allows."""
    strict = seccomp.build_filter(families=())
    monkeypatch.setattr(
        sandbox.seccomp, "worker_settings",
        lambda network_isolated: {"seccomp": strict.hex(), "capset": seccomp.syscall_number("capset")},
    )
    code = "import socket\ntry:\n    socket.socketpair()\n    print('made')\nexcept OSError as exc:\n    print(exc.errno)"
    with Sandbox(slots=2, prefork=1) as box:
        r = box.run(code)
        if not box.isolation.get("seccomp"):
            pytest.skip("this host's sandbox runs without a seccomp filter (no namespaces)")
        assert r.stdout.strip() == str(errno.EAFNOSUPPORT), (r.stdout, r.stderr)
    monkeypatch.undo()
    with Sandbox(slots=2, prefork=1) as plain:
        assert plain.run(code).stdout.strip() == "made"


# ------------------------------------------------------------------ the wire, defined once
def test_both_sides_frame_with_the_wire_module():
    assert sandbox._HEADER is wire.HEADER
    assert wire.HEADER.size <= wire.MAX_HEADER
    kind, mem, cpu, fsize, nproc = wire.HEADER.unpack(SandboxLimits(timeout=2).to_wire(session=True))
    assert (kind, mem, cpu, fsize, nproc) == (wire.REQUEST_SESSION, 1024 << 20, 2.0, 16 << 20, 16)
    assert wire.HEADER.unpack(SandboxLimits().to_wire())[0] == wire.REQUEST_RUN
    framed = sandbox._frame("print(1)", "in")
    (n,) = wire.CODE_LENGTH.unpack(framed[: wire.CODE_LENGTH.size])
    assert framed[wire.CODE_LENGTH.size :] == b"print(1)in" and n == len(b"print(1)")
