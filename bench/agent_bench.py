"""How fast the reference agent (``python -m simulations.agent``) starts, answers and stops.

A conformance run starts one agent process per test, so the agent's start-up is most of a
run's time. This script measures, over ``--runs`` processes: spawn to the first answer
(initialize), the median round trip of a request (session/new, session/prompt, session/list),
stdin closed to process exit, and a restart on the same ``--store`` (stop, start, first
answer); and, for comparison, ``python -c "import acp"`` (the SDK with its pydantic models,
which the agent does not import) against ``import simulations.agent``.

    .venv/bin/python bench/agent_bench.py [--runs 10] [--requests 50]

Numbers go in bench/RESULTS.md ("The reference agent").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Agent:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            got: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if "method" not in got:
                return got

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms (min {min(values) * 1000:.1f})"


def _import_seconds(statement: str, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], cwd=ROOT, check=True)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--requests", type=int, default=50)
    args = p.parse_args()
    start, trip, stop, restart = [], [], [], []
    envelope = {"mode": "append", "content": [{"type": "text", "text": "a"}]}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            store = str(Path(tmp) / f"run{run}")
            t = time.perf_counter()
            agent = Agent("--store", store)
            agent.call("initialize", protocolVersion=1)
            start.append(time.perf_counter() - t)
            for i in range(args.requests):
                t = time.perf_counter()
                if i % 3 == 0:
                    agent.call("session/new", cwd="/w", mcpServers=[], systemPrompt=envelope)
                elif i % 3 == 1:
                    hello = [{"type": "text", "text": "hello"}]
                    agent.call("session/prompt", sessionId=f"s{i // 3 + 1}", prompt=hello)
                else:
                    agent.call("session/list")
                trip.append(time.perf_counter() - t)
            t = time.perf_counter()
            agent.stop()
            stop.append(time.perf_counter() - t)
            t = time.perf_counter()
            again = Agent("--store", store)
            again.call("initialize", protocolVersion=1)
            restart.append(time.perf_counter() - t + stop[-1])
            again.stop()
    print(f"reference agent, v1-stable, {args.runs} processes (+ as many restarts)")
    print(f"  spawn → initialize answered   {_ms(start)}")
    print(f"  one request, round trip        {_ms(trip)}  ({len(trip)} requests)")
    print(f"  stdin closed → exit            {_ms(stop)}")
    print(f"  restart on the same --store    {_ms(restart)}  (stop + start + initialize)")
    print(f"  python -c 'import acp'         {_ms(_import_seconds('import acp', args.runs))}")
    agent_import = _import_seconds("import simulations.agent", args.runs)
    print(f"  python -c 'import simulations.agent'  {_ms(agent_import)}")


if __name__ == "__main__":
    main()
