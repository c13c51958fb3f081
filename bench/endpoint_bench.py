"""Benchmark: what reading the slot from the model endpoint costs against the introspection
extension, on the reference agent's whole conform suite (v1-stable), and what the network
namespace adds.

Usage::

    python bench/endpoint_bench.py [--revision v1-stable] [--repeat 1]
    python bench/endpoint_bench.py --flood [--root DIR] [--limit-mb 300]

Three runs of the same plan: the slot from ``_acp_sysprompt/system_slot`` (the reference agent
as it is); from its model calls (``--model-endpoint``), each agent process in a network
namespace where this runs as root; and the same without the namespace (the plan computed
once before, untimed). For each: tests,
model calls, seconds, verdict. Timings on a loaded machine mean little: run it alone.

``--flood``: the endpoint against a hostile caller, each flood in a fresh endpoint process
(``--root``: the source tree it is imported from, this one by default; an export of an older
commit measures the endpoint before), the peak RSS of that process (``VmHWM`` of
``/proc/<pid>/status``) and its most threads seen: nothing sent (the floor); 1.5 GB streamed
after ``Content-Length: -1``, and as chunks; 100 calls of 20 MiB (a 20 MiB slot each) over
``FLOOD_SENDERS`` connections at once; 1,000 idle connections held. Then what each answered
and what the endpoint kept, dropped, clipped and refused. Exits 1 where a peak is over
``--limit-mb`` (300 MB) or a normal call after the flood is not answered 200.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run(revision: str, endpoint: bool) -> tuple[int, int, float, bool]:
    from simulations.live.conform.conform import conform

    argv = [sys.executable, "-m", "simulations.agent", "--revision", revision, "--store", "{store}"]
    if endpoint:
        argv += ["--model-endpoint", "{endpoint}"]
    t0 = time.perf_counter()
    report = conform(argv, revision=revision, cwd=str(ROOT), timeout=10, model_endpoint=endpoint)
    return len(report.runs), report.model_calls, time.perf_counter() - t0, report.conformant


# ---- --flood ---------------------------------------------------------------------------------

FLOOD_BYTES = 1_500_000_000  # streamed after a length that is not one, and as chunks
BIG_CALLS, BIG_SIZE = 100, 20 << 20  # calls of 20 MiB each
FLOOD_SENDERS = 8  # connections the big calls are sent over, at once
IDLE = 1_000  # idle connections held
PIECE = b"x" * (1 << 20)  # what is streamed, 1 MiB at a time: never the whole in memory

SERVE = """
import json, sys
sys.path.insert(0, {root!r})
from simulations.live.endpoint.endpoint import ModelEndpoint
with ModelEndpoint() as ep:
    print(ep.port, flush=True)
    sys.stdin.readline()
    kept = dict(calls=ep.last_seq, kept=len(ep.calls))
    counts = {{k: getattr(ep, k, None) for k in ("kept_bytes", "dropped", "clipped", "refused")}}
    print(json.dumps(kept | counts), flush=True)
"""


def _status(pid: int) -> dict[str, int]:
    """VmHWM and VmRSS (kB) and Threads of process ``pid``."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "Threads"):
            out[key] = int(value.split()[0])
    return out


def _status_line(s: socket.socket) -> str:
    """The status line the endpoint answered on ``s`` ("" where it closed without one)."""
    got = b""
    with contextlib.suppress(OSError):
        while b"\r\n" not in got:
            piece = s.recv(4096)
            if not piece:
                break
            got += piece
    return got.split(b"\r\n", 1)[0].decode("latin-1")


def _call(port: int, body: bytes, s: socket.socket | None = None) -> str:
    """One call (on ``s``, kept open, or a new connection); its answer's status line."""
    own = s is None
    s = s or socket.create_connection(("127.0.0.1", port), timeout=60)
    head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    try:
        s.sendall(head.encode() + body)
        got = b""
        while b"\r\n\r\n" not in got:
            piece = s.recv(65536)
            if not piece:
                return got.split(b"\r\n", 1)[0].decode("latin-1")
            got += piece
        head_bytes, _, rest = got.partition(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in head_bytes.split(b"\r\n")[1:])
        size = int(fields.get(b"Content-Length", b"0"))
        while len(rest) < size:
            piece = s.recv(65536)
            if not piece:
                break
            rest += piece
        return head_bytes.split(b"\r\n", 1)[0].decode("latin-1")
    finally:
        if own:
            s.close()


def _stream(port: int, head: str, chunked: bool) -> str:
    """Send ``head``, then ``FLOOD_BYTES`` a piece at a time until sent or the endpoint
    closes; what it answered, and how much was sent."""
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    sent = 0
    frame = b"%x\r\n%s\r\n" % (len(PIECE), PIECE) if chunked else PIECE
    try:
        s.sendall(head.encode())
        while sent < FLOOD_BYTES:
            s.sendall(frame)
            sent += len(PIECE)
        s.sendall(b"0\r\n\r\n" if chunked else b"")
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the endpoint answered and closed
    status = _status_line(s)
    s.close()
    return f"{status or '(no answer)'}, {sent / 1e6:,.0f} MB sent"


def _big_calls(port: int) -> str:
    prompt = [{"role": "user", "content": "turn"}]
    body = json.dumps({"system": "s" * BIG_SIZE, "messages": prompt}).encode()
    answers: Counter[str] = Counter()
    lock = threading.Lock()

    def sender(n: int) -> None:
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        for _ in range(n):
            try:
                status = _call(port, body, s)
            except OSError as e:
                status = type(e).__name__
            if not status.startswith("HTTP/1.1 200"):
                s.close()
                s = socket.create_connection(("127.0.0.1", port), timeout=120)
            with lock:
                answers[status or "(no answer)"] += 1
        s.close()

    share = [
        BIG_CALLS // FLOOD_SENDERS + (i < BIG_CALLS % FLOOD_SENDERS) for i in range(FLOOD_SENDERS)
    ]
    threads = [threading.Thread(target=sender, args=(n,)) for n in share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ", ".join(f"{n} × {status}" for status, n in answers.most_common())


def _idle(port: int, pid: int, most: list[int]) -> str:
    held = []
    try:
        for _ in range(IDLE):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        time.sleep(1.0)  # the endpoint accepts them all, serves or turns them away
        most.append(_status(pid)["Threads"])
        turned = 0
        for s in held:
            s.settimeout(0.01)
            with contextlib.suppress(OSError):
                turned += s.recv(12).startswith(b"HTTP/1.1 503")
        during = _call(port, GOOD_CALL)
    finally:
        for s in held:
            s.close()
    return f"{IDLE - turned} held, {turned} answered 503; a call during: {during}"


GOOD_CALL = json.dumps(
    {"system": "slot", "messages": [{"role": "user", "content": "after the flood"}]}
).encode()


def _sample(pid: int, most: list[int], done: threading.Event) -> None:
    """The threads of process ``pid``, every 50 ms until ``done``."""
    while not done.wait(0.05):
        with contextlib.suppress(OSError):
            most.append(_status(pid)["Threads"])


def flood(root: str, limit_mb: float) -> int:
    floods: list[tuple[str, Callable[[int, int, list[int]], str]]] = [
        ("nothing (the floor)", lambda port, pid, most: "-"),
        (
            "1.5 GB after Content-Length: -1",
            lambda port, pid, most: _stream(
                port, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", False
            ),
        ),
        (
            "1.5 GB as chunks",
            lambda port, pid, most: _stream(
                port,
                "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                True,
            ),
        ),
        (
            f"{BIG_CALLS} calls × 20 MiB, {FLOOD_SENDERS} at once",
            lambda port, pid, most: _big_calls(port),
        ),
        (f"{IDLE:,} idle connections", _idle),
    ]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, IDLE + 256)), hard))
    print(
        f"the endpoint of {root}; peak RSS (VmHWM) of its process per flood, limit {limit_mb:g} MB"
    )
    ok = True
    for label, run in floods:
        code = SERVE.format(root=root)
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        assert proc.stdin is not None and proc.stdout is not None
        port = int(proc.stdout.readline())
        most: list[int] = []
        sampling = threading.Event()
        sampler = threading.Thread(target=_sample, args=(proc.pid, most, sampling))
        sampler.start()
        t0 = time.perf_counter()
        try:
            said = run(port, proc.pid, most)
        except OSError as e:
            said = f"{type(e).__name__}: {e}"
        seconds = time.perf_counter() - t0
        after = _call(port, GOOD_CALL) if proc.poll() is None else "(the endpoint is gone)"
        sampling.set()
        sampler.join()
        status = _status(proc.pid) if proc.poll() is None else {"VmHWM": -1, "Threads": -1}
        proc.stdin.write("\n")
        proc.stdin.flush()
        kept: dict[str, Any] = json.loads(proc.stdout.readline() or "{}")
        proc.wait(30)
        peak = status["VmHWM"] / 1024
        ok = ok and 0 <= peak <= limit_mb and after.startswith("HTTP/1.1 200")
        print(
            f"{label:36s} peak {peak:7.1f} MB, threads {max(most, default=0):4d}, "
            f"{seconds:5.1f} s: {said}; a call after: {after}; kept {json.dumps(kept)}",
            flush=True,
        )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--revision", default="v1-stable")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--flood", action="store_true", help="the endpoint against a hostile caller")
    p.add_argument("--root", default=str(ROOT), help="--flood: the source tree of the endpoint")
    p.add_argument("--limit-mb", type=float, default=300.0, help="--flood: peak RSS allowed")
    args = p.parse_args(argv)
    if args.flood:  # the endpoint alone, in processes of its own: nothing else imported here
        return flood(os.path.abspath(args.root), args.limit_mb)
    from simulations.live.conform.conform import conform
    from simulations.live.process import sandbox

    run_warm = [sys.executable, "-m", "simulations.agent", "--revision", args.revision]
    conform(run_warm, revision=args.revision, cwd=str(ROOT), only=["S6-twice"])  # the plan, once
    rows = []
    for label, endpoint, sandboxed in (
        ("introspection", False, False),
        ("model endpoint", True, sandbox.available()),
        ("model endpoint, no namespace", True, False),
    ):
        best = None
        for _ in range(args.repeat):
            with mock.patch.object(sandbox, "available", lambda s=sandboxed: s):
                got = run(args.revision, endpoint)
            best = got if best is None or got[2] < best[2] else best
        assert best is not None
        rows.append((label, *best))
        print(
            f"{label:30s} {best[0]:3d} tests {best[1]:4d} calls {best[2]:6.1f} s  "
            f"{'CONFORMANT' if best[3] else 'NOT CONFORMANT'}",
            flush=True,
        )
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
