"""Benchmark: `acp-sysprompt validate` on a 1,000,000-message log (issue 17, part 5).

Run: .venv/bin/python bench/validate_bench.py [--messages 1000000] [--revision v1-stable]

It writes a conforming v1-stable session log in our transcript.ndjson form into a temporary
folder (removed at the end): one connection, two sessions created with a prompt, then the same
cycle over and over — a turn on each session, close the first, load it re-sending its prompt, a
turn on it, list — with request ids counting up over the whole file, so the model's world comes
back to the same state every cycle (the cycle's messages are the model's own transcript of
that cycle, ``simulations.wire.acp.transcript``, with the agent's session/update notifications:
a chunk per turn, the history the load replays — the second cycle's, repeated). It then runs
the command-line tool on it in a fresh process and prints the messages, seconds, messages/s,
the CPU seconds and the peak RSS of that process (``os.wait4``), and exits 1 if the run found
anything (the log is conforming) or is over the targets: ≤ 30 s and ≤ 200 MiB.

Hostile logs (issue 25), each size in a fresh process, CPU seconds and peak RSS per size:

- ``--unanswered N [N ...]``: N session/load requests never answered, each followed by a
  stray answer (an id no request has) and a session/update for the session being loaded:
  every answer and every update meets all the open requests, so a validator that walks them
  is quadratic; the CPU seconds must grow about as N does.
- ``--distinct MiB``: that many MiB of session/update notifications whose texts all differ
  (4 KiB each): the peak RSS must stay flat, not grow with the MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.revisions import REVISIONS  # noqa: E402
from model.types import Block, BlockKind, Caps, PromptCap, Request  # noqa: E402
from simulations.engines.trace import Trace  # noqa: E402
from simulations.wire.acp import transcript  # noqa: E402

TARGET_SECONDS, TARGET_BYTES = 30.0, 200 << 20
CLI = [sys.executable, "-m", "simulations"]


def _cycle(revision: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The opening messages and one cycle's, from the model's transcript of two cycles."""
    a = (Block(BlockKind.TEXT, "a"),)
    profile = Caps(PromptCap.OVERRIDE, load_session=True, close=True, list=True)
    opening = [
        Request("connect"),
        Request("initialize"),
        Request("session_new", system_prompt=a, mode="append"),
        Request("session_new"),
    ]
    cycle = [
        Request("session_prompt", sid="s1"),
        Request("session_prompt", sid="s2"),
        Request("session_close", sid="s1"),
        Request("session_load", sid="s1", system_prompt=a, mode="append"),
        Request("session_prompt", sid="s1"),
        Request("session_list"),
    ]
    rev = REVISIONS[revision]
    msgs = transcript(Trace(profile, tuple(opening + cycle + cycle)), rev.tables, wire=rev.wire)
    asked = [i for i, m in enumerate(msgs) if "method" in m and "id" in m]  # not notifications
    first, second = asked[-2 * len(cycle)], asked[-len(cycle)]
    return msgs[:first], msgs[second:]


def write_log(path: Path, messages: int, revision: str) -> int:
    """Write about ``messages`` messages (whole cycles); return how many were written."""
    opening, cycle = _cycle(revision)
    n = written = 0
    with path.open("w", encoding="utf-8") as f:
        for m in opening:
            f.write(json.dumps(m, sort_keys=True) + "\n")
            written += 1
        n = max(m["id"] for m in opening if "id" in m)
        base = min(m["id"] for m in cycle if "id" in m)
        lines = [json.dumps(m, sort_keys=True) for m in cycle]
        templates = [(line, m.get("id", 0) - base) for line, m in zip(lines, cycle, strict=True)]
        requests = sum("id" in m and "method" in m for m in cycle)
        while written + len(cycle) <= messages:
            for line, offset in templates:
                old = f'"id": {base + offset}'
                f.write(line.replace(old, f'"id": {n + 1 + offset}', 1) + "\n")
            n += requests
            written += len(cycle)
    return written


class Run(NamedTuple):
    code: int
    stdout: str
    stderr: str
    wall: float
    cpu: float  # user + system seconds of the child alone
    peak: int  # its peak RSS, bytes


def validate_cli(log: Path, revision: str, tmp: Path) -> Run:
    """``acp-sysprompt validate --json LOG`` in a fresh process, measured alone."""
    out, err = tmp / "stdout", tmp / "stderr"
    with out.open("wb") as o, err.open("wb") as e:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*CLI, "validate", "--json", str(log), "--revision", revision],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=o,
            stderr=e,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out.read_text(), err.read_text()
    out.unlink()
    err.unlink()
    cpu = usage.ru_utime + usage.ru_stime
    return Run(proc.returncode, *text, wall, cpu, usage.ru_maxrss * 1024)  # KiB on Linux


def write_unanswered(path: Path, n: int) -> int:
    """``n`` open session/loads, each with a stray answer and an update (see the docstring)."""
    head = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}},
    ]
    load = {"sessionId": "s", "cwd": "/", "mcpServers": []}
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}}
    update["params"]["update"] = chunk
    tail = json.dumps(update)
    with path.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(m) + "\n" for m in head)
        for i in range(1, n + 1):
            ask = {"jsonrpc": "2.0", "id": i, "method": "session/load", "params": load}
            f.write(
                f"{json.dumps(ask)}\n{json.dumps({'jsonrpc': '2.0', 'id': -i, 'result': {}})}\n"
            )
            f.write(tail + "\n")
    return len(head) + 3 * n


def write_distinct(path: Path, mib: int) -> int:
    """About ``mib`` MiB of session/update notifications, every text different."""
    head = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}},
    ]
    n = (mib << 20) // (4 << 10)
    with path.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(m) + "\n" for m in head)
        for i in range(n):
            text = f"{i:010d}" + "z" * ((4 << 10) - 160)
            content = {"type": "text", "text": text}
            update = {"sessionUpdate": "agent_message_chunk", "content": content}
            params = {"sessionId": "s", "update": update}
            f.write(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}))
            f.write("\n")
    return len(head) + n


def hostile(args: argparse.Namespace) -> int:
    """The hostile cases asked for: one line per size, CPU seconds and peak RSS."""
    cases = [("unanswered", n, write_unanswered) for n in args.unanswered or ()]
    cases += [("distinct MiB", n, write_distinct) for n in args.distinct or ()]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="validate-bench-") as tmp:
        for what, n, write in cases:
            log = Path(tmp) / "hostile.ndjson"
            written = write(log, n)
            size = log.stat().st_size
            run = validate_cli(log, args.revision, Path(tmp))
            log.unlink()
            failed += run.code not in (0, 1)
            print(
                f"{what} {n:,}: {written:,} messages ({size / 2**20:.0f} MiB)  "
                f"{run.cpu:.1f}s CPU, {run.wall:.1f}s wall  peak RSS {run.peak / 2**20:.0f} MiB"
                + (f"  exit {run.code}: {run.stderr.strip()[:200]}" if run.code > 1 else ""),
                flush=True,
            )
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--revision", default="v1-stable")
    ap.add_argument("--unanswered", type=int, nargs="+", metavar="N")
    ap.add_argument("--distinct", type=int, nargs="+", metavar="MIB")
    args = ap.parse_args()
    if args.unanswered or args.distinct:
        return hostile(args)
    with tempfile.TemporaryDirectory(prefix="validate-bench-") as tmp:
        log = Path(tmp) / "session.ndjson"
        written = write_log(log, args.messages, args.revision)
        size = log.stat().st_size
        run = validate_cli(log, args.revision, Path(tmp))
    if run.code not in (0, 1):
        print(run.stderr, file=sys.stderr)
        return 1
    data = json.loads(run.stdout)
    print(
        f"validate {args.revision}: {written:,} messages ({size / 2**20:.0f} MiB)  "
        f"{data['seconds']:.1f}s validating, {run.wall:.1f}s wall, {run.cpu:.1f}s CPU  "
        f"{written / data['seconds']:,.0f} messages/s  peak RSS {run.peak / 2**20:.0f} MiB  "
        f"findings {len(data['findings'])}"
    )
    ok = not data["findings"] and run.wall <= TARGET_SECONDS and run.peak <= TARGET_BYTES
    if data["findings"]:
        print(json.dumps(data["findings"][:5], indent=1), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
