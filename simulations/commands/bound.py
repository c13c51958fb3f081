"""``acp-sysprompt bound show``: a bound printed as the TOML file ``--bound FILE.toml`` reads.

Scope
    ``add_parser`` and ``run``: a named bound, or a bound file checked against the limits
    (``simulations.engines.bounds``), printed; a bound refused is one line naming the field.
"""

from __future__ import annotations

import argparse
from typing import Any

from simulations.api import UsageError
from simulations.engines.bounds import BOUNDS, BoundError, bound_toml, limits_text, load_bound


def add_parser(sub: Any) -> None:
    bd = sub.add_parser(
        "bound",
        help="print a bound as the TOML file --bound FILE.toml reads",
        description="Print a bound as the TOML file --bound FILE.toml reads. A bound file "
        f"asks for {limits_text()} (per scope; blocks per prompt; scopes and envelope scopes "
        "each); past a limit it is refused in one line naming the field.",
    )
    bd.add_argument("action", choices=("show",))
    bd.add_argument("name", help=f"{', '.join(BOUNDS)} or a FILE.toml (checked, then printed)")


def run(args: argparse.Namespace) -> int:
    try:
        print(bound_toml(load_bound(args.name)), end="")
    except BoundError as e:
        raise UsageError(f"argument name: {e}") from None
    return 0
