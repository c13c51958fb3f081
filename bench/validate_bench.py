"""Benchmark: `acp-sysprompt validate` on a 1,000,000-message log (issue 17, part 5).

Run: .venv/bin/python bench/validate_bench.py [--messages 1000000] [--revision v1-stable]

It writes a conforming v1-stable session log in our transcript.ndjson form into a temporary
folder (removed at the end): one connection, two sessions created with a prompt, then the same
cycle over and over — a turn on each session, close the first, load it re-sending its prompt, a
turn on it, list — with request ids counting up over the whole file, so the model's world comes
back to the same state every cycle (the cycle's messages are the model's own transcript of
that cycle, ``simulations.wire.acp.transcript``, with the agent's session/update notifications:
a chunk per turn, the history the load replays — the second cycle's, repeated). It then runs
the command-line tool on it in a fresh process and prints the messages, seconds, messages/s
and the peak RSS of that process (``resource.getrusage(RUSAGE_CHILDREN)``), and exits 1 if
the run found anything (the log is conforming) or is over the targets: ≤ 30 s and ≤ 200 MiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--revision", default="v1-stable")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="validate-bench-") as tmp:
        log = Path(tmp) / "session.ndjson"
        written = write_log(log, args.messages, args.revision)
        size = log.stat().st_size
        start = time.perf_counter()
        proc = subprocess.run(
            [*CLI, "validate", "--json", str(log), "--revision", args.revision],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    if proc.returncode not in (0, 1):
        print(proc.stderr, file=sys.stderr)
        return 1
    data = json.loads(proc.stdout)
    print(
        f"validate {args.revision}: {written:,} messages ({size / 2**20:.0f} MiB)  "
        f"{data['seconds']:.1f}s validating, {wall:.1f}s wall  "
        f"{written / data['seconds']:,.0f} messages/s  peak RSS {peak / 2**20:.0f} MiB  "
        f"findings {len(data['findings'])}"
    )
    ok = not data["findings"] and wall <= TARGET_SECONDS and peak <= TARGET_BYTES
    if data["findings"]:
        print(json.dumps(data["findings"][:5], indent=1), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
