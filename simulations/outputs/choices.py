"""What ACP v1 as stabilised leaves open, as choices with consequences.

Scope
    The stabilised text lets an agent choose what an omitted prompt on load/resume/fork means
    (T15: keep the stored one or use the default), says nothing on a re-sent prompt that differs
    (T16: apply it, keep the stored one or reject the request), and only recommends that the
    client re-send what it created the session with (T6, a SHOULD: a client may re-send any
    valid value, the same one, or none). ``choices_matrix`` checks every combination
    exhaustively and reports P1–P9 for each: which guarantees each choice costs.

Abstractions
    A combination is one agent build and one client population, so restarts keep the agent's
    capability profile (``restarts="same"``) unless asked otherwise. T11 (an empty array: reject
    or accept) is left at the reference agent's "reject": only a client that breaks T5 sends
    one, and P ids judge sessions of conforming clients; ``empty_array_changes_nothing`` checks
    that claim for a given bound.

Source
    model.revisions.envelope_tables (T6, T11, T15, T16 of docs/REQUIREMENTS.md).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Literal

from model.invariants import CHECKS
from model.revisions import CLIENT_RESENDS, ON_DIFFER, ON_OMIT, REVISIONS, envelope_tables
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.explore import explore

P_IDS = tuple(f"P{i}" for i in range(1, 10))
# (choice, values, the id that leaves it open, who makes it)
DIMENSIONS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("on_omit", ON_OMIT, "T15", "agent"),
    ("on_differ", ON_DIFFER, "T16", "agent"),
    ("client_resends", CLIENT_RESENDS, "T6", "client"),
)
REFERENCE_CHOICES = {"on_omit": "keep", "on_differ": "apply", "client_resends": "any"}


@dataclass(frozen=True)
class Combination:
    choices: tuple[tuple[str, str], ...]
    verdicts: dict[str, int | None]  # P id (and T6) → shortest counterexample length, None: holds
    states: int

    @property
    def keeps_t6(self) -> bool:
        """The client follows the SHOULD (re-sends what it created the session with)."""
        return self.verdicts.get("T6") is None

    def held(self) -> list[str]:
        return [p for p in P_IDS if self.verdicts[p] is None]


def _bound(bound: str, restarts: Literal["same", "any"]) -> Bound:
    b = BOUNDS[bound].restricted(REVISIONS["v1-stable"].admits)
    scopes = tuple(replace(s, domain=s.domain.with_restarts(restarts)) for s in b.scopes)
    return replace(b, scopes=scopes)


def check_choices(
    choices: dict[str, str],
    bound: str = "small",
    restarts: Literal["same", "any"] = "same",
    workers: int = 1,
) -> Combination:
    ids = (*P_IDS, "T6")
    checks = [CHECKS[rid] for rid in ids]  # the matrix shows these verdicts only
    ex = explore(
        envelope_tables(**choices), _bound(bound, restarts), checks=checks, workers=workers
    )
    verdicts = {rid: ex.length(rid) if rid in ex.first else None for rid in ids}
    return Combination(tuple(choices.items()), verdicts, ex.states)


def choices_matrix(
    bound: str = "small", restarts: Literal["same", "any"] = "same", workers: int = 1
) -> list[Combination]:
    """Every combination of the open choices, each checked exhaustively within ``bound``."""
    names = [d[0] for d in DIMENSIONS]
    return [
        check_choices(dict(zip(names, values, strict=True)), bound, restarts, workers)
        for values in itertools.product(*(d[1] for d in DIMENSIONS))
    ]


def empty_array_changes_nothing(bound: str = "small", workers: int = 1) -> bool:
    """T11's two answers give the reference choices the same P verdicts (see the docstring)."""
    a = check_choices(dict(REFERENCE_CHOICES), bound, workers=workers)
    b = check_choices({**REFERENCE_CHOICES, "on_empty": "accept"}, bound, workers=workers)
    return {p: a.verdicts[p] is None for p in P_IDS} == {p: b.verdicts[p] is None for p in P_IDS}


def matrix_markdown(rows: list[Combination]) -> str:
    head = [d[0] + f" ({d[2]})" for d in DIMENSIONS]
    lines = [
        "| " + " | ".join(head) + " | " + " | ".join(P_IDS) + " | T6 | guarantees kept |",
        "|" + "---|" * (len(head) + len(P_IDS) + 2),
    ]
    for c in rows:
        ch = dict(c.choices)
        marks = ["✓" if c.verdicts[p] is None else f"✗ {c.verdicts[p]}" for p in P_IDS]
        t6 = "✓" if c.keeps_t6 else f"✗ {c.verdicts['T6']}"
        ref = " (reference)" if ch == REFERENCE_CHOICES else ""
        lines.append(
            "| "
            + " | ".join(f"`{ch[d[0]]}`" for d in DIMENSIONS)
            + " | "
            + " | ".join(marks)
            + f" | {t6} | {len(c.held())} of 9{ref} |"
        )
    return "\n".join(lines)
