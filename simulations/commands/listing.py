"""``acp-sysprompt list``: the names the tool ships (``simulations.api.listing``).

Scope
    ``add_parser`` and ``run``: the revisions, engines, bounds, profiles, clients, amendments,
    proposals and mutants, one line per kind (``--json``: all of ``listing``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from simulations.api import listing


def add_parser(sub: Any) -> None:
    ls = sub.add_parser("list", help="list revisions, mutants, engines and bounds")
    ls.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    data = listing()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print("revisions: " + ", ".join(r["name"] for r in data["revisions"]))
    print("engines:   " + ", ".join(e["name"] for e in data["engines"]))
    print("bounds:    " + ", ".join(b["name"] for b in data["bounds"]))
    print("profiles:  " + ", ".join(p["name"] for p in data["profiles"]))
    print("clients:   " + ", ".join(c["name"] for c in data["clients"]))
    print("amendments: " + ", ".join(a["name"] for a in data["amendments"]))
    print("proposals: " + ", ".join(f"{a['name']} (of {a['base']})" for a in data["proposals"]))
    print("mutants (name → id it must violate):")
    for m in data["mutants"]:
        print(f"  {m['name']:42s} {m['violates']:4s} {m['summary']}")
    return 0
