"""Every mutant's shortest counterexample as a small JSON fixture, for cheap tests.

Run: .venv/bin/python tools/mutant_traces.py [--check]

Finding every mutant's shortest counterexample (``smallest_bound_showing``, as the kill
matrix and ``tools/write_itf_traces.py`` do) costs about 20 CPU seconds; a test that needs
only the traces reads them from ``tests/fixtures/mutant_counterexamples.json``, written here.
``--check`` recomputes them and exits 1 (naming the mutants) where the fixture differs: run it
after a change to the model, the bounds or the mutants. ``trace_json`` / ``trace_of`` are the
two directions of the fixture's form (a ``Trace``: the agent's first profile and the requests).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from model.mutants import MUTANTS
from model.types import Block, BlockKind, Caps, ClientKind, PromptCap, Request
from simulations.engines.explore import smallest_bound_showing
from simulations.engines.trace import Trace

FIXTURE = Path(__file__).resolve().parent.parent / "tests/fixtures/mutant_counterexamples.json"
_FLAGS = ("load_session", "resume", "fork", "close", "delete", "list")


def _caps(c: Caps) -> dict[str, Any]:
    return {"system_prompt": c.system_prompt.value, **{f: getattr(c, f) for f in _FLAGS}}


def _caps_of(d: dict[str, Any]) -> Caps:
    return Caps(PromptCap(d["system_prompt"]), **{f: bool(d[f]) for f in _FLAGS})


def _request(r: Request) -> dict[str, Any]:
    out: dict[str, Any] = {"method": r.method, "conn": r.conn}
    if r.sid is not None:
        out["sid"] = r.sid
    if r.system_prompt is not None:
        out["system_prompt"] = [[b.kind.value, b.text] for b in r.system_prompt]
    if r.mode is not None:
        out["mode"] = r.mode
    if r.client is not ClientKind.CONFORMING:
        out["client"] = r.client.value
    if r.profile is not None:
        out["profile"] = _caps(r.profile)
    return out


def _request_of(d: dict[str, Any]) -> Request:
    sp = d.get("system_prompt")
    return Request(
        d["method"],
        d["conn"],
        sid=d.get("sid"),
        system_prompt=None if sp is None else tuple(Block(BlockKind(k), t) for k, t in sp),
        mode=d.get("mode"),
        client=ClientKind(d.get("client", ClientKind.CONFORMING.value)),
        profile=_caps_of(d["profile"]) if "profile" in d else None,
    )


def trace_json(trace: Trace) -> dict[str, Any]:
    return {"profile": _caps(trace.profile), "requests": [_request(r) for r in trace.requests]}


def trace_of(d: dict[str, Any]) -> Trace:
    return Trace(_caps_of(d["profile"]), tuple(_request_of(r) for r in d["requests"]))


def compute() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, m in MUTANTS.items():
        admits = None if m.revision == "rfd-final" else m.admits
        ex = smallest_bound_showing(m.tables, m.violates, admits)
        if m.violates not in ex.first:
            raise SystemExit(f"mutant_traces: {name} shows no {m.violates} up to default")
        out[name] = {
            "id": m.violates,
            "revision": m.revision,
            "bound": ex.bound.name,
            **trace_json(ex.trace(m.violates)),
        }
    return out


def read_fixture(path: Path = FIXTURE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--check", action="store_true", help="compare with the fixture, write nothing")
    args = ap.parse_args()
    fresh = compute()
    if args.check:
        old = read_fixture()
        stale = sorted(n for n in fresh.keys() | old.keys() if fresh.get(n) != old.get(n))
        print("up to date" if not stale else f"stale: {', '.join(stale)}")
        return 1 if stale else 0
    FIXTURE.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(fresh)} traces to {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
