"""``acp-sysprompt cache``: the answers remembered across runs (``simulations.engines.cache``).

Scope
    ``add_parser`` and ``run``: ``info`` (where the folder is, its entries, size and bound;
    ``--json``) and ``clear`` (every entry removed).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from simulations.commands.common import cached
from simulations.engines import cache as user_cache


def add_parser(sub: Any) -> None:
    ca = sub.add_parser("cache", help="the answers remembered across runs: info, clear")
    ca.add_argument("action", choices=("info", "clear"))
    cached(ca, off=False)
    ca.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    folder = user_cache.chosen(args.cache)
    if folder is None:
        print(f"cache: off ({user_cache.CACHE}={os.environ.get(user_cache.CACHE)})")
        return 0
    if args.action == "clear":
        removed = user_cache.clear(folder)
        print(f"cache {folder}: removed {removed} entr{'y' if removed == 1 else 'ies'}")
        return 0
    data = user_cache.info(folder)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"cache:   {data['path']}{'' if data['exists'] else ' (not created yet)'}")
    print(f"entries: {data['entries']:,}")
    print(f"size:    {user_cache.size(data['bytes'])} ({data['bytes']:,} bytes)")
    print(f"bound:   {user_cache.size(data['max_bytes'])} ({user_cache.CACHE_MAX})")
    return 0
