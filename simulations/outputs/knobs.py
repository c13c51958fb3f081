"""A profile's idle knobs: a departure whose rows no step of the check reached, and why.

Scope
    ``idle_knobs`` names each departure of a profile whose table edit never fired in its
    check (none of the rows it edits was used by any step within the bound) and, where
    resetting one other departure makes those rows fire, that departure as the reason:
    "``size_limit`` never fires: the agent advertises no systemPrompt". The command line
    prints each as a warning after the verdicts (``check --profile``, engine bfs).

Abstractions
    The rows a knob edits are derived from the tables: the rows of the profile's tables that
    the tables with that knob alone reset (``Profile.reference_with``) do not have. A knob
    that edits no row (one that narrows the bound, such as ``advertises_prompt = "none"``)
    is never called idle. Whether a row fired is the exploration's coverage
    (``Exploration.rows``), so "never fires" is within the bound checked; a reason is given
    only where a re-run shows it. ``REASONS`` words a few knob values for the reader; any
    other is named as ``knob = value``.

Source
    Ours.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from model.machines import RowRef
from model.profiles import Profile

# how a knob value that can keep another knob's rows from firing is said
REASONS: dict[tuple[str, Any], str] = {
    ("advertises_prompt", "none"): "the agent advertises no systemPrompt",
    ("advertises_prompt", "meta_only"): "the agent advertises systemPrompt only in _meta",
    ("advertises_methods", "none"): "the agent advertises no session method",
    ("advertises_methods", "load_only"): "the agent advertises session/load only",
    ("advertises_methods", "no_fork"): "the agent advertises no session/fork",
    ("reads_prompt", "nowhere"): "the agent reads the prompt nowhere",
}


def edited_rows(p: Profile, knob: str) -> frozenset[RowRef]:
    """The rows of ``p``'s tables that ``knob``'s edit made (absent once it alone is reset)."""
    without = p.reference_with({k: v for k, v in p.departures().items() if k != knob}).tables()
    return frozenset(
        (name, i) for name, i, row in p.tables().rows() if row not in set(without.table(name))
    )


def idle_knobs(
    p: Profile,
    fired: frozenset[RowRef],
    bound: str,
    rerun: Callable[[Profile], frozenset[RowRef] | None],
) -> dict[str, str]:
    """Each departure of ``p`` none of whose edited rows is in ``fired`` (the rows its check
    used) → the warning that says so, with the other departure whose reset alone makes them
    fire (``rerun``: the rows the check of a profile used, None if unknown)."""
    departures = p.departures()
    out = {}
    for knob, value in departures.items():
        rows = edited_rows(p, knob)
        if not rows or rows & fired:
            continue
        why = None
        for other, v in departures.items():
            q = p.reference_with({k: x for k, x in departures.items() if k != other})
            if other == knob or getattr(q, knob) != value:
                continue
            used = rerun(q)
            if used is not None and edited_rows(q, knob) & used:
                why = REASONS.get((other, v), f"{other} = {json.dumps(v)}")
                break
        out[knob] = (
            f"`{knob}` never fires: {why}"
            if why
            else f"`{knob}` never fires within bound {bound}: no step reaches the rows it edits"
        )
    return out
