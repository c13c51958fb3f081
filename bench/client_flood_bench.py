"""Benchmark: ``conform-client``'s peak memory under a hostile client's floods (issue 40).

Usage::

    python bench/client_flood_bench.py [--agents 20] [--mib 64] [--gib 1] [--limit-mb 300]
        [--only baseline,records,stderr] [--no-sandbox] [--timeout 600]

Each flood is one test of ``conform_client`` (the plan's first test aiming at S5: ``new fork
close``) run in a fresh Python process of its own, the tool's, with ``TMPDIR`` a scratch
folder made here and removed afterwards:

- ``baseline``: the repository's scripted client (conforming build), nothing more;
- ``records``: in its ``new`` step the client first starts ``--agents`` agent processes at
  once through the agent command it is given, and pushes through each an ``initialize`` then
  ``--mib`` lines of just under 1 MiB (``session/prompt`` requests with a big text: each
  line is parsed and recordable), then runs the scripted client;
- ``stderr``: in its ``new`` step a child of the client writes ``--gib`` GiB to the step's
  stderr, then the scripted client runs.

For each: the peak RSS of the tool's process (``tool MB``: ``VmHWM`` of
``/proc/self/status``, read in that process after its report is rendered and dumped as
``--report-json`` would; ``run MB`` the same read as ``conform_client`` returns, ``held MB``
its ``VmRSS`` then, the report and its records still held); the most the tool's
descendants took together (``kids MB``: the sum of their ``VmRSS``, sampled every 0.25 s, so
shared pages count once per process); the most ``TMPDIR`` held on disk (sampled); the
seconds; and what the report said (records kept and their bytes, lines unread, the
findings, the stderr tail kept, the verdict). ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is
no measure of the children here: a child the tool starts with ``vfork`` and ``exec`` is
charged the tool's own high-water mark at that moment (it equalled ``tool MB``).

The hostile client is a Python program (``HOSTILE``, run as ``python -c``), adapted from
``tests/test_client_conform_hostile.py``'s. Exit 0 when every flood's tool peak is within
``--limit-mb`` (300 MB: issue 40's target), 1 when one is over it or its run failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLOODS = ("baseline", "records", "stderr")

HOSTILE = r'''
import json, os, shlex, subprocess, sys, threading

mode, args = sys.argv[1], sys.argv[2:]


def agent_command():
    return args[args.index("--agent") + 1] if "--agent" in args else ""


def scripted(rest):
    cmd = [sys.executable, "-m", "simulations.live.conform_client.scripted_client", *rest]
    return subprocess.run(cmd, check=False).returncode


def feed(lines):
    """One agent process: an initialize, then ``lines`` session/prompt lines of < 1 MiB."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    proc = subprocess.Popen(
        shlex.split(agent_command()), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        proc.stdin.write((json.dumps(init) + "\n").encode())
        for k in range(1, lines + 1):
            params = {"sessionId": "flood", "prompt": [{"type": "text", "text": TEXT}]}
            msg = {"jsonrpc": "2.0", "id": k, "method": "session/prompt", "params": params}
            proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.close()
    except OSError:
        pass
    proc.wait(timeout=600)


if mode == "records":  # records N MIB: N agent processes at once, MIB lines of ~1 MiB each
    n, lines, rest = int(args[0]), int(args[1]), args[2:]
    args = rest
    TEXT = "x" * ((1 << 20) - 512)  # the whole line just under the tee's LINE_KEPT: parsed
    threads = [threading.Thread(target=feed, args=(lines,)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.exit(scripted(rest))

if mode == "stderr":  # stderr GIB: GIB GiB on stderr from a child, then the scripted client
    gib, rest = int(args[0]), args[1:]
    writer = (
        "import os\n"
        "chunk, sent = b'x' * 65536, 0\n"
        f"while sent < {gib} << 30:\n"
        "    sent += os.write(2, chunk)\n"
        "os.write(2, b'\\nEND of the flood: %d bytes\\n' % sent)\n"
    )
    subprocess.run([sys.executable, "-I", "-S", "-c", writer], check=False)
    sys.exit(scripted(rest))

sys.exit(f"hostile: unknown mode {mode}")
'''


def _recipe(flood: str, agents: int, mib: int, gib: int) -> Any:
    """The scripted recipe, its ``new`` step run by the hostile client's mode for ``flood``."""
    from simulations.live.conform_client import conform as cc

    base = cc.scripted_recipe("conforming")
    if flood == "baseline":
        return base
    words = base.steps["new"]
    prefix = ("{python}", "-m", "simulations.live.conform_client.scripted_client")
    assert words[:3] == prefix, words
    extra = (str(agents), str(mib)) if flood == "records" else (str(gib),)
    new = (sys.executable, "-c", HOSTILE, flood, *extra, *words[3:])
    return replace(base, name=f"{flood} (conforming)", steps={**base.steps, "new": new})


def _status_mb(pid: int | str, key: str) -> float:
    """``key`` (VmHWM, VmRSS) of ``/proc/<pid>/status`` in MB; 0 where it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def one(flood: str, agents: int, mib: int, gib: int, timeout: float, boxed: bool) -> int:
    """In the tool's own fresh process: one test under ``flood``; one JSON line on stdout."""
    from simulations.live.conform_client import conform as cc
    from simulations.live.process import sandbox

    if not boxed:
        sandbox.available = lambda: False
    recipe = _recipe(flood, agents, mib, gib)
    t0 = time.perf_counter()
    report = cc.conform_client(recipe, Path("."), timeout=timeout, only=["S5"], budget=1)
    seconds = time.perf_counter() - t0
    run_mb = _status_mb("self", "VmHWM")
    held_mb = _status_mb("self", "VmRSS")  # the report (its records) still held
    text = report.render()
    dumped = json.dumps(report.to_json(), indent=2)
    peak_mb = _status_mb("self", "VmHWM")
    first = report.results[0] if report.results else None
    kept = 0
    if first is not None:
        for rec in first.records:
            msg = rec.get("message")
            kept += len(json.dumps(msg)) if msg is not None else len(rec.get("raw", ""))
    out = {
        "flood": flood,
        "sandboxed": report.sandboxed,
        "run_mb": run_mb,
        "peak_mb": peak_mb,
        "held_mb": held_mb,
        "seconds": seconds,
        "records": len(first.records) if first else 0,
        "processes": len({r.get("process") for r in first.records}) if first else 0,
        "kept_mb": kept / (1 << 20),
        "unread": first.unread if first else 0,
        "findings": first.findings if first else [],
        "bound_said": first is not None
        and all("past the test's bound" in o.message for o in first.outcomes)
        and bool(first.unread),
        "steps": [
            (s, code, len(tail.encode()), tail.strip()[-60:])
            for s, _, code, tail in (first.steps if first else [])
        ],
        "verdict": report.verdict,
        "internal_error": report.internal_error,
        "rendered": len(text),
        "json": len(dumped),
    }
    print(json.dumps(out), flush=True)
    return 0


def _disk(folder: Path) -> int:
    """Bytes of the files under ``folder`` now (what vanishes meanwhile is skipped)."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` now (by their parents, from ``/proc/<pid>/stat``)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int((d / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _watch(pid: int, folder: Path, most: dict[str, float], done: threading.Event) -> None:
    """Every 0.25 s: the sum of the RSS of ``pid``'s descendants, and the disk ``folder``
    takes; the most of each seen kept in ``most``."""
    while not done.wait(0.25):
        rss = sum(_status_mb(p, "VmRSS") for p in _descendants(pid))
        most["children"] = max(most.get("children", 0.0), rss)
        most["disk"] = max(most.get("disk", 0.0), _disk(folder) / (1 << 20))


def _said(r: dict[str, Any]) -> str:
    parts = [
        f"{r['records']:,} records kept ({r['kept_mb']:.1f} MiB, {r['processes']} processes), "
        f"{r['unread']:,} unread"
        + (" (each outcome says so: not judged)" if r["bound_said"] else "")
    ]
    parts += [f"finding: {f[:90]}" for f in r["findings"][:2]]
    for step, code, size, end in r["steps"]:
        if step == "new":
            parts.append(f"new: exit {code}, stderr tail {size} B ending {end[-30:]!r}")
    if r["internal_error"]:
        parts.append("INTERNAL ERROR: " + r["internal_error"].strip().splitlines()[-1])
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", type=int, default=20, help="records: agent processes (20)")
    p.add_argument("--mib", type=int, default=64, help="records: ~1 MiB lines per process (64)")
    p.add_argument("--gib", type=int, default=1, help="stderr: GiB written (1)")
    p.add_argument("--limit-mb", type=float, default=300.0, help="the tool's peak RSS allowed")
    p.add_argument("--only", default=",".join(FLOODS), help="comma-separated floods")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per step (600)")
    p.add_argument("--no-sandbox", action="store_true", help="every step without the sandbox")
    p.add_argument("--one", choices=FLOODS, help=argparse.SUPPRESS)  # the tool's own process
    args = p.parse_args(argv)
    if args.one:
        return one(args.one, args.agents, args.mib, args.gib, args.timeout, not args.no_sandbox)
    floods = [f.strip() for f in args.only.split(",") if f.strip()]
    unknown = [f for f in floods if f not in FLOODS]
    if unknown:
        p.error(f"--only: {unknown[0]}: not one of {', '.join(FLOODS)}")
    print(
        f"conform-client, one test (S5) per flood, each in a fresh process; records: "
        f"{args.agents} agents × {args.mib} lines of ~1 MiB; stderr: {args.gib} GiB; "
        f"limit {args.limit_mb:g} MB",
        flush=True,
    )
    header = (
        f"{'flood':9s} {'tool MB':>8s} {'run MB':>7s} {'held MB':>7s} {'kids MB':>8s} "
        f"{'disk MB':>8s} {'s':>6s}  verdict / what the report said"
    )
    print(header, flush=True)
    ok = True
    for flood in floods:
        scratch = Path(tempfile.mkdtemp(prefix="client-flood-bench-"))
        cmd = [
            sys.executable,
            __file__,
            "--one",
            flood,
            *("--agents", str(args.agents), "--mib", str(args.mib), "--gib", str(args.gib)),
            *("--timeout", str(args.timeout)),
            *(["--no-sandbox"] if args.no_sandbox else []),
        ]
        most: dict[str, float] = {}
        done = threading.Event()
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(scratch)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        watcher = threading.Thread(target=_watch, args=(proc.pid, scratch, most, done))
        watcher.start()
        try:
            out, errors = proc.communicate()
        finally:
            done.set()
            watcher.join()
            left = _disk(scratch)
            shutil.rmtree(scratch, ignore_errors=True)
        code, lines = proc.returncode, out.strip().splitlines()
        if code != 0 or not lines:
            ok = False
            print(f"{flood:9s} FAILED (exit {code}): {errors.strip()[-800:]}")
            continue
        r = json.loads(lines[-1])
        over = r["peak_mb"] > args.limit_mb
        ok = ok and not over and not r["internal_error"]
        print(
            f"{flood:9s} {r['peak_mb']:8.1f} {r['run_mb']:7.1f} {r['held_mb']:7.1f} "
            f"{most.get('children', 0.0):8.1f} {most.get('disk', 0.0):8.1f} "
            f"{r['seconds']:6.1f}  {'OVER THE LIMIT ' if over else ''}"
            f"{r['verdict']}\n{'':10s}{_said(r)}"
            + (f"; {left} B left in TMPDIR" if left else "")
            + ("" if r["sandboxed"] else " (no sandbox)"),
            flush=True,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
