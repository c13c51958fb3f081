"""Two designs side by side (``check --compare A B``), and a change of share said in words.

Scope
    ``Side`` is what one subject of a comparison says of each P id, whatever it is: a
    revision or an amendment judged as a population (how many of its pairs lose the id), or
    one build (a revision without open choices, a profile: holds or violated), with the
    length of the id's shortest counterexample. ``side_of_population`` and
    ``side_of_build`` make one; ``render_comparison`` and ``comparison_json`` put two side by
    side. ``share_change`` says how the share of pairs that lose an id changes ("28 of 144
    → 28 of 72: the share doubled"); the verdict diffs of ``check --amend``
    (``simulations.api.render_diff`` for one build, ``simulations.outputs.population`` for a
    population) say it with the same words. Running the two checks is the library API's
    (``simulations.compare``); this module only reads their results.

Abstractions
    A share is a fraction: the pairs that lose an id over the pairs judged (a build is one
    pair: 0 of 1 or 1 of 1). Its change is said as "from none to some", "from some to all"
    and the like where an end is none or all, as a multiple where one share is a whole
    multiple of the other ("doubled", "halved", "grew 5-fold", "fell to a fifth"), and as
    percentages otherwise. "holds" = no violation within the bound, for every pair judged.

Source
    Ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from model.spec import P_IDS
from simulations.engines.population import HELD_BY_ALL, LOST_BY_ALL, LOST_BY_SOME, Judged

HOLDS, VIOLATED = "holds", "violated"
_TIMES = {2: "doubled", 3: "tripled", 4: "quadrupled"}
_PART = {2: "halved", 3: "fell to a third", 4: "fell to a quarter", 5: "fell to a fifth"}


@dataclass(frozen=True)
class Share:
    """``lost`` of ``pairs`` lose an id; ``build``: one build judged (holds / violated)."""

    lost: int
    pairs: int
    build: bool = False

    @property
    def fraction(self) -> Fraction:
        return Fraction(self.lost, self.pairs) if self.pairs else Fraction(0)

    def __str__(self) -> str:
        if self.build:
            return VIOLATED if self.lost else HOLDS
        return f"{self.lost} of {self.pairs}"


def _percent(x: Fraction, other: Fraction) -> str:
    """``x`` as a percentage, with a decimal where the whole numbers would not tell it from
    ``other``."""
    whole = f"{float(x) * 100:.0f}%"
    return whole if whole != f"{float(other) * 100:.0f}%" else f"{float(x) * 100:.1f}%"


def change_words(before: Fraction, after: Fraction) -> str:
    """How a share of pairs changes, in words (module docstring)."""
    if before == after:
        if before == 0:
            return "none before and after"
        return "all before and after" if before == 1 else "the share is unchanged"
    if before == 0:
        return "from none to all" if after == 1 else "from none to some"
    if after == 0:
        return "from all to none" if before == 1 else "from some to none"
    if after == 1:
        return "from some to all"
    if before == 1:
        return "from all to some"
    ratio = after / before
    if ratio.denominator == 1:
        n = ratio.numerator
        return f"the share {_TIMES.get(n, f'grew {n}-fold')}"
    if ratio.numerator == 1:
        n = ratio.denominator
        return f"the share {_PART.get(n, f'fell to 1/{n}')}"
    how = "rose" if after > before else "fell"
    return f"the share {how} from {_percent(before, after)} to {_percent(after, before)}"


def share_change(before: Share, after: Share) -> str:
    """``28 of 144 → 28 of 72: the share doubled``; ``violated → holds: from all to none``."""
    if before.build and after.build and before.lost == after.lost:
        return f"{before} → {after}: unchanged"
    return f"{before} → {after}: {change_words(before.fraction, after.fraction)}"


@dataclass
class Side:
    """What one subject of a comparison says of each P id."""

    label: str  # "v1-stable as a population", "profile buzz-agent (rfd-final)"
    kind: Literal["population", "build"]
    pairs: int
    lost: dict[str, int]  # P id → pairs that lose it (a build: 0 or 1)
    shortest: dict[str, int]  # P id → its shortest counterexample's length, where lost
    complete: bool = True
    restarts: str = "any"
    details: dict[str, Any] = field(default_factory=dict)  # the subject's own JSON

    def share(self, rid: str) -> Share:
        return Share(self.lost.get(rid, 0), self.pairs, self.kind == "build")

    def lost_by(self, rid: str) -> str:
        """``none``, ``some`` or ``all`` of its pairs lose ``rid`` (a build: none or all): what
        a verdict says, whichever kind of side it is."""
        lost = self.lost.get(rid, 0)
        return "none" if lost == 0 else "all" if lost == self.pairs else "some"

    def verdict(self, rid: str) -> str:
        lost = self.lost.get(rid, 0)
        if self.kind == "build":
            return VIOLATED if lost else HOLDS
        return HELD_BY_ALL if lost == 0 else LOST_BY_ALL if lost == self.pairs else LOST_BY_SOME


def side_of_population(title: str, j: Judged, restarts: str) -> Side:
    """A population judged (``simulations.outputs.population.check_population``)."""
    return Side(
        f"{title} as a population ({len(j.outcomes)} pairs)",
        "population",
        len(j.outcomes),
        {rid: len(j.losers(rid)) for rid in P_IDS},
        {rid: min(o.lengths[rid] for o in j.losers(rid)) for rid in P_IDS if j.losers(rid)},
        j.complete,
        restarts,
    )


def side_of_build(
    label: str,
    verdicts: dict[str, str],
    lengths: dict[str, int],
    complete: bool = True,
    restarts: str = "any",
) -> Side:
    """One build: ``verdicts`` (holds / violated / n/a per id) and each violated id's
    shortest counterexample length."""
    lost = {rid: int(verdicts.get(rid) == VIOLATED) for rid in P_IDS}
    shortest = {rid: lengths[rid] for rid in P_IDS if lost[rid] and rid in lengths}
    return Side(label, "build", 1, lost, shortest, complete, restarts)


def _steps(side: Side, rid: str) -> str:
    n = side.shortest.get(rid)
    return "-" if n is None else f"{n} steps"


def render_comparison(a: Side, b: Side, bound: str) -> str:
    """Per P id: A's and B's verdicts, the share of pairs that lose it (said as a change from
    A to B) and each side's shortest counterexample; ``←`` marks a verdict that differs (none,
    some or all of the pairs lose it: a build's holds is a population's holds for every pair)."""
    done = "" if a.complete and b.complete else "  INTERRUPTED: partial"
    lines = [
        f"acp-sysprompt check --compare  bound={bound}{done}",
        f"  A: {a.label}  restarts={a.restarts}",
        f"  B: {b.label}  restarts={b.restarts}",
        "holds = no violation within the bound (for a population: for every pair); the share "
        "is of the pairs that lose the id; shortest: its shortest counterexample (A | B)",
        "",
        f"{'id':4s} {'A':22s} {'B':22s} {'shortest':19s} share of pairs that lose it (A → B)",
    ]
    differ = []
    for rid in P_IDS:
        va, vb = a.verdict(rid), b.verdict(rid)
        steps = f"{_steps(a, rid)} | {_steps(b, rid)}"
        mark = "  ←" if a.lost_by(rid) != b.lost_by(rid) else ""
        if mark:
            differ.append(rid)
        lines.append(
            f"{rid:4s} {va:22s} {vb:22s} {steps:19s} {share_change(a.share(rid), b.share(rid))}"
            + mark
        )
    lines += [
        "",
        f"← marks the {len(differ)} id{'s' if len(differ) != 1 else ''} whose verdict differs: "
        f"{', '.join(differ)}"
        if differ
        else "no P id's verdict differs",
    ]
    return "\n".join(lines)


def _side_json(side: Side) -> dict[str, Any]:
    return {
        "label": side.label,
        "kind": side.kind,
        "pairs": side.pairs,
        "restarts": side.restarts,
        "complete": side.complete,
        **side.details,
    }


def comparison_json(a: Side, b: Side, bound: str) -> dict[str, Any]:
    return {
        "bound": bound,
        "a": _side_json(a),
        "b": _side_json(b),
        "properties": {
            rid: {
                **{
                    key: {
                        "verdict": s.verdict(rid),
                        "lost_by": s.lost.get(rid, 0),
                        "pairs": s.pairs,
                        "shortest": s.shortest.get(rid),
                    }
                    for key, s in (("a", a), ("b", b))
                },
                "differs": a.lost_by(rid) != b.lost_by(rid),
                "share_change": share_change(a.share(rid), b.share(rid)),
            }
            for rid in P_IDS
        },
        "complete": a.complete and b.complete,
    }
