"""The population verdict of a revision: ``check --revision v1-stable`` as a spec author reads it.

Scope
    ``check_population`` judges every agent × client pair a revision (or an amended one)
    allows (``simulations.engines.population.judge``) and ``render_population`` prints, per
    property, whether it holds for every pair, is lost by some (with the choice values that
    lose it and a shortest counterexample for each) or is lost by all. A counterexample
    that answers several headings (ids, combinations of choices) with the very same steps is
    printed once under all of them. ``population_json`` is the same as data (each heading
    keeps its counterexample and names the headings it shares it with). ``AmendmentReport``
    compares a base's population with the amended one: only a verdict that changes is
    marked ``←``; a share of losing pairs that changes is said in words (``share_change``,
    shared with ``check --compare``). The reference
    build alone is still ``check --reference``.

Abstractions
    The revision's rules (R, S, T ids) judge one build, not a population: a member takes
    only values the text allows, so it keeps them by construction (a test checks it on the
    small bound). The rules an amendment adds are judged on every member of the base and of
    the amended population: a member of the amended one that breaks its rule is a fault of
    the model and fails the run.

Source
    Ours (see ``model.population``).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from model.amend import AMENDABLE, Amendment
from model.files import shown as shown_text
from model.invariants import CHECKS, Check
from model.population import (
    Member,
    Population,
    choice_of,
    describe,
    population_of,
    rule_check,
)
from model.revisions import REVISIONS
from model.spec import P_IDS, REQUIREMENTS
from model.witnesses import WITNESSES, vacuous
from simulations.engines.bounds import Bound
from simulations.engines.exploration import id_order
from simulations.engines.population import (
    HELD_BY_ALL,
    LOST_BY_ALL,
    Judged,
    Outcome,
    judge,
)
from simulations.engines.trace import render_steps
from simulations.outputs.compare import Share, share_change
from simulations.usage import UsageError
from simulations.wire.acp import revision_wire, wire_fields

if TYPE_CHECKING:
    from simulations.outputs.paste import Subject


@dataclass
class PopulationCheck:
    revision: str
    judged: Judged
    restarts: str
    title: str = ""  # what was judged ("v1-stable", "amendment X of v1-stable")

    @property
    def population(self) -> Population:
        return self.judged.population

    def exit_code(self, strict: bool) -> int:
        if self.judged.rules_broken():
            return 1
        if strict and any(self.judged.verdict(p) != HELD_BY_ALL for p in P_IDS):
            return 1
        return 0


def check_population(
    revision: str,
    bound: Bound,
    restarts: str,
    population: Population | None = None,
    workers: int = 1,
    symmetry: bool = True,
    progress: Any = None,
    title: str = "",
    extra: list[Check] | None = None,
) -> PopulationCheck:
    """Every pair of ``population`` (default: the revision's) judged within ``bound`` on the
    P ids, plus ``extra`` checks (the rules an amendment adds). The revision's own rules are
    not judged per member: a member takes only values the text allows, so it keeps them by
    construction (``tests/test_population.py`` checks that on the small bound)."""
    pop = population or population_of(revision)
    checks = [*(CHECKS[rid] for rid in P_IDS), *(extra or [])]
    judged = judge(pop, bound, checks, workers, symmetry, progress=progress)
    return PopulationCheck(revision, judged, restarts, title or revision)


def _pattern(p: Member) -> str:
    return describe(p) if p else "every member"


def _cites(p: Member) -> str:
    return ", ".join(f"{k}={v} ({choice_of(k).leaves_open})" for k, v in p)


class Clock:
    """The command's wall clock and its named stages (base population, amended population,
    diff …), as a header says them: ``wall 161.2s (base population 148.0s, …)``."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self.stages: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.stages.append((name, time.monotonic() - t0))

    def wall(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        parts = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in self.stages)
        return f"wall {self.wall():.1f}s" + (f" ({parts})" if parts else "")

    def json(self) -> dict[str, Any]:
        return {
            "wall_seconds": round(self.wall(), 3),
            "stages": {name: round(seconds, 3) for name, seconds in self.stages},
        }


def header(pc: PopulationCheck, clock: Clock | None = None) -> str:
    """The first line: what was checked, its size, and the time — the command's wall clock
    and its stages where a ``clock`` is given, else this population's searches alone."""
    j, pop = pc.judged, pc.population
    done = "" if j.complete else "  INTERRUPTED: partial"
    took = clock.line() if clock is not None else f"{j.seconds:.1f}s"
    # searches: one per scope for every member (split only where they answer differently);
    # reused: a member's result for a scope, searched in this process for another population
    reused = f" + {j.shared} scope results reused" if j.shared else ""
    return (
        f"acp-sysprompt check: {pc.title} as a population  engine=bfs  bound={j.bound.name} "
        f"({'+'.join(s.name for s in j.bound.scopes)})  {j.searches} "
        f"search{'' if j.searches == 1 else 'es'} for {len(j.outcomes)} pairs "
        f"({pop.agents()} agents × {pop.clients()} clients){reused}  "
        f"restarts={pc.restarts}  {took}{done}"
    )


def render_population(pc: PopulationCheck, steps: bool = True, clock: Clock | None = None) -> str:
    j, pop = pc.judged, pc.population
    lines = [
        header(pc, clock),
        "every pair: one agent and one client the text allows; holds = no violation within "
        "the bound for that pair",
        "",
        "choices the text leaves open (the reference build's value first):",
    ]
    width = max([19, *(len(c.name) for c in pop.choices)])
    for c in pop.choices:
        allowed = dict(pop.allowed)[c.name]
        first = dict(pop.reference)[c.name]
        values = [first, *(v for v in allowed if v != first)]
        lines.append(
            f"  {c.name:{width}s} {c.leaves_open:7s} {c.who:6s} {' | '.join(values):24s} {c.what}"
        )
    lines += [
        "",
        f"{'id':4s} {'verdict':22s} lost where (n steps: the shortest counterexample of a pair "
        "that loses it through those choices alone)",
    ]
    ref = j.reference()
    for rid in P_IDS:
        v = j.verdict(rid)
        n = len(j.losers(rid))
        if v == HELD_BY_ALL:
            why = vacuous(rid, j.witnesses())
            lines.append(f"{rid:4s} {v}" + (f" (vacuous: {why})" if why else ""))
            continue
        label = v if v == LOST_BY_ALL else f"{v} ({n} of {len(j.outcomes)})"
        where = "; ".join(f"{_pattern(p)} ({o.lengths[rid]} steps)" for p, o in j.losing(rid))
        lines.append(f"{rid:4s} ✗ {label:20s} {where}")
    broken = j.rules_broken()
    lines.append("")
    if broken:
        lines.append(
            "MODEL FAULT: members break rules they are bound by: "
            + "; ".join(f"{rid} ({len(ms)} members)" for rid, ms in broken.items())
        )
    lines.append(
        f"rules ({REVISIONS[pc.revision].name}'s R, S, T ids) bind one build: every member "
        "keeps them by construction; the reference build's verdicts: check --reference"
    )
    lost_ref = [rid for rid in P_IDS if ref.lost(rid)]
    lines.append(
        f"the reference build ({describe(ref.member)}) loses {', '.join(lost_ref) or 'nothing'}"
    )
    if steps:
        tables_of = pop.tables
        states = REVISIONS[pc.revision].states
        fields = wire_fields(revision_wire(pc.revision))
        entries = [
            (
                rid,
                f"{rid} lost where {_cites(p) or 'every member'}: {o.lengths[rid]} steps "
                f"(member: {describe(o.member)})",
                render_steps(o.traces[rid], tables_of(o.member), states, fields),
            )
            for rid in P_IDS
            for p, o in j.losing(rid)
        ]
        for heads, shown in same_steps(entries):
            lines.append("")
            lines += _headings(heads)
            lines.append(shown)
    return "\n".join(lines)


def same_steps(entries: list[tuple[str, str, str]]) -> list[tuple[list[tuple[str, str]], str]]:
    """``(id, heading, steps text)`` entries grouped by their steps text, in the order each
    text first appears: every heading an identical counterexample answers, and that text once."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for rid, heading, text in entries:
        groups.setdefault(text, []).append((rid, heading))
    return [(heads, text) for text, heads in groups.items()]


def _headings(
    heads: list[tuple[str, str]], quote: bool = True, indent: str = "", end: str = ""
) -> list[str]:
    """Each heading (with ``quote``, each id's text once under its headings) and, when one
    counterexample answers more than one heading, a line saying it is printed once for all
    (else ``end`` closes the one heading)."""
    lines = []
    for i, (rid, heading) in enumerate(heads):
        lines.append(indent + heading + (end if len(heads) == 1 else ""))
        if quote and (i + 1 == len(heads) or heads[i + 1][0] != rid):
            lines.append(f'{indent}  "{REQUIREMENTS[rid].text}"')
    if len(heads) > 1:
        lines.append(f"{indent}  one counterexample answers these {len(heads)} headings:")
    return lines


def lost_where_subject(
    subject: Subject,
    pc: PopulationCheck,
    rid: str,
    where: Member,
    member: Member,
    amendment: tuple[Amendment, str] | None = None,
    bound: str = "default",
) -> Subject:
    """What the review.md of one heading "``rid`` lost where ``where``" says (``check
    --out``): ``subject`` (what ``replay`` needs in the ITF) with the member named only by
    the choices that matter to its path, in words (``paste.member_words``), how many pairs
    lose ``rid``, and last the command that writes the same counterexample from a fresh
    clone (``counterexample --member``; ``amendment``: the amendment and its name or file as
    given; ``bound``: the bound as given)."""
    from dataclasses import replace

    from simulations.outputs.paste import member_words, subject_of

    j = pc.judged
    of = subject_of(pc.revision).split(" (", 1)[0]  # revision `v1-stable`
    which = ["--revision", pc.revision]
    if amendment is not None:
        of = f"amendment `{amendment[0].name}` of {of}"
        which = ["--amend", amendment[1]]
    words = member_words(where, pc.revision)
    note = (
        f"Lost by {len(j.losers(rid))} of the {len(j.outcomes)} pairs {pc.title} allows "
        f"(bound `{j.bound.name}`), every such pair among them."
        if where
        else f"Lost by every pair (bound `{j.bound.name}`)."
    )
    if amendment is not None and rid in amendment[0].fixes:
        note = f"Claim {rid} of amendment `{amendment[0].name}`: **NOT kept**. {note}"
    argv = [
        "acp-sysprompt", "counterexample", *which, "--bound", bound, "--id", rid,
        "--member", describe(member), "--out", rid,
    ]  # fmt: skip
    return replace(
        subject,
        title=f"{words}; {of}",
        note=note,
        where=where,
        command=" ".join(shlex.quote(a) for a in argv),
    )


def population_json(pc: PopulationCheck) -> dict[str, Any]:
    from simulations.engines.trace import trace_json

    j, pop = pc.judged, pc.population
    states = REVISIONS[pc.revision].states
    fields = wire_fields(revision_wire(pc.revision))
    # each heading keeps its counterexample; headings whose counterexamples are identical
    # also name each other (``same_counterexample_as``), as the text prints such one once
    steps = {
        (rid, p): trace_json(o.traces[rid], pop.tables(o.member), states, fields)
        for rid in P_IDS
        for p, o in j.losing(rid)
    }
    alike: dict[str, list[tuple[str, Member]]] = {}
    for key, ce in steps.items():
        alike.setdefault(json.dumps(ce, sort_keys=True), []).append(key)

    def same_as(rid: str, p: Member) -> list[dict[str, Any]]:
        group = alike[json.dumps(steps[rid, p], sort_keys=True)]
        return [{"id": r, "choices": dict(x)} for r, x in group if (r, x) != (rid, p)]

    return {
        "revision": pc.revision,
        "title": pc.title,
        "population": {
            "choices": [
                {
                    "name": c.name,
                    "leaves_open": c.leaves_open,
                    "who": c.who,
                    "allowed": list(dict(pop.allowed)[c.name]),
                    "reference": dict(pop.reference)[c.name],
                }
                for c in pop.choices
            ],
            "pairs": len(j.outcomes),
            "agents": pop.agents(),
            "clients": pop.clients(),
        },
        "bound": j.bound.name,
        "scopes": [s.name for s in j.bound.scopes],
        "restarts": pc.restarts,
        "searches": j.searches,
        "shared": j.shared,
        "seconds": round(j.seconds, 3),
        "complete": j.complete,
        "properties": {
            rid: {
                "verdict": j.verdict(rid),
                "vacuous": vacuous(rid, j.witnesses()),
                "lost_by": len(j.losers(rid)),
                "lost_where": [
                    {
                        "choices": dict(p),
                        "member": dict(o.member),
                        "length": o.lengths[rid],
                        "counterexample": steps[rid, p],
                        "same_counterexample_as": same_as(rid, p),
                    }
                    for p, o in j.losing(rid)
                ],
            }
            for rid in P_IDS
        },
        "witnesses": sorted(j.witnesses() & set(WITNESSES), key=lambda w: int(w[1:])),
        "witnesses_missed": sorted(set(WITNESSES) - j.witnesses(), key=lambda w: int(w[1:])),
        "rules_broken": {rid: [dict(m) for m in ms] for rid, ms in j.rules_broken().items()},
        "members": [
            {
                "choices": dict(o.member),
                "lost": sorted((r for r in o.lengths if r in P_IDS), key=id_order),
                "other_ids_violated": sorted(
                    (r for r in o.lengths if r not in P_IDS), key=id_order
                ),
                "witnesses": sorted(o.witnesses),
                "states": o.states,
                "searched_scopes": o.searched,
                "shared_scopes": o.shared,
            }
            for o in j.outcomes
        ],
    }


@dataclass
class AmendmentReport:
    """An amendment judged as a spec edit: its base's population against the amended one."""

    amendment: Amendment
    base: PopulationCheck
    amended: PopulationCheck

    def claims(self) -> dict[str, list[tuple[Member, Outcome]]]:
        """Each claimed P id → where the amended population still loses it (empty: holds)."""
        j = self.amended.judged
        return {
            rid: j.losing(rid) if j.verdict(rid) != HELD_BY_ALL else []
            for rid in self.amendment.fixes
        }

    def new_rules(self) -> dict[str, tuple[list[Member], list[Member]]]:
        """Each added rule → (amended members that break it, base members that break it)."""
        out = {}
        for r in self.amendment.rules:
            out[r.rid] = (
                [o.member for o in self.amended.judged.outcomes if r.rid in o.lengths],
                [o.member for o in self.base.judged.outcomes if r.rid in o.lengths],
            )
        return out

    @property
    def kept(self) -> bool:
        """Every claim holds for every pair, and every added rule for every amended member."""
        return not any(self.claims().values()) and not any(a for a, _ in self.new_rules().values())

    def render(self) -> str:
        a, b, m = self.amendment, self.base.judged, self.amended.judged
        lines = [
            "",
            f"amendment {a.name} of {a.base}: judged over every pair each text allows",
            f"  edits: {'; '.join(a.edit_lines())}",
        ]
        if a.sentence:
            lines.append(f'  sentence: "{a.sentence}"')
        split = b.population.splits()
        lines.append(
            f"  pairs: {len(b.outcomes)} allowed by {a.base}{f' with {split}' if split else ''}, "
            f"{len(m.outcomes)} by the amended text"
        )
        changed = [d["id"] for d in self.diff() if d["changed"]]
        marks = (
            f"← marks the {len(changed)} id{'s' if len(changed) != 1 else ''} whose verdict "
            f"changes: {', '.join(changed)}"
            if changed
            else "no id's verdict changes"
        )
        lines.append(f"  verdict diff ({marks}; a count that changes alone is said in words):")
        for d in self.diff():
            lines.append(f"  {d['id']:4s} {_diff_line(d)}")
        for rid, (broken_amended, broken_base) in self.new_rules().items():
            r = next(x for x in a.rules if x.rid == rid)
            at = f" at {r.situation}" if r.situation else ""
            lines.append(
                f"  rule {rid} ({r.choice} MUST be {r.value}{at}): broken by {len(broken_base)} of "
                f"{len(b.outcomes)} pairs of {a.base}, {len(broken_amended)} of the amended text's"
            )
        entries = []
        for rid, losing in self.claims().items():
            if not losing:
                lines.append(f"  claim {rid}: holds for every pair the amended text allows")
            entries += [
                (
                    rid,
                    f"claim {rid}: NOT kept: lost where {_cites(p) or 'every member'} — "
                    f"{o.lengths[rid]} steps (member: {describe(o.member)})",
                    render_steps(
                        o.traces[rid],
                        self.amended.population.tables(o.member),
                        REVISIONS[a.base].states,
                        wire_fields(revision_wire(a.base)),
                    ),
                )
                for p, o in losing
            ]
        for heads, shown in same_steps(entries):
            lines += _headings(heads, quote=False, indent="  ", end=":")
            lines += ["    " + x for x in shown.splitlines()]
        claimed = ", ".join(a.fixes) or "nothing"
        lines.append(f"  claims {claimed}: {'kept' if self.kept else 'NOT kept'}")
        return "\n".join(lines)

    def diff(self) -> list[dict[str, Any]]:
        """Per P id, its verdict over the base's pairs and over the amended text's, with how many
        pairs lose it in each; ``changed`` only when the verdict itself changes (holds for
        every pair / lost by some / lost by all), never for a count alone."""
        b, m = self.base.judged, self.amended.judged
        return [
            {
                "id": rid,
                "before": b.verdict(rid),
                "after": m.verdict(rid),
                "changed": b.verdict(rid) != m.verdict(rid),
                "lost_by_before": len(b.losers(rid)),
                "lost_by_after": len(m.losers(rid)),
                "pairs_before": len(b.outcomes),
                "pairs_after": len(m.outcomes),
            }
            for rid in P_IDS
        ]

    def json(self) -> dict[str, Any]:
        return {
            "amendment": self.amendment.describe(),
            "base": population_json(self.base),
            "amended": population_json(self.amended),
            "diff": self.diff(),
            "claims": {
                rid: [
                    {"choices": dict(p), "member": dict(o.member), "length": o.lengths[rid]}
                    for p, o in losing
                ]
                for rid, losing in self.claims().items()
            },
            "new_rules": {
                rid: {
                    "broken_by_amended": [dict(x) for x in am],
                    "broken_by_base": [dict(x) for x in bm],
                }
                for rid, (am, bm) in self.new_rules().items()
            },
            "keeps_claims": self.kept,
        }


def _diff_line(d: dict[str, Any]) -> str:
    """``lost by some → holds for every pair (16 of 144 → 0 of 48: from some to none)  ←`` for
    a verdict that changes; ``lost by some (28 of 144 → 28 of 72: the share doubled; verdict
    unchanged)`` for one that does not: the share of losing pairs said in words
    (``simulations.outputs.compare.share_change``, as ``check --compare`` says it)."""
    shares = share_change(
        Share(d["lost_by_before"], d["pairs_before"]), Share(d["lost_by_after"], d["pairs_after"])
    )
    if d["changed"]:
        return f"{d['before']} → {d['after']} ({shares})  ←"
    return f"{d['before']} ({shares}; verdict unchanged)"


def rule_checks(amendment: Amendment) -> list[Check]:
    """The checks of the rules ``amendment`` adds (``model.population.rule_check``), over its
    base's population: a rule binds one choice, so the agent's other choices are free as the
    base text leaves them, and "broken by N of M pairs" of the base counts only members that
    break the rule itself (over the amended population, a base member whose other choice the
    amendment narrows answered as no allowed agent would, and was counted too)."""
    if not amendment.rules:  # a proposal over a revision of one build adds none
        return []
    pop = AMENDABLE[amendment.base]
    return [rule_check(r.rid, r.choice, r.value, pop, r.situation) for r in amendment.rules]


def member_named(pop: Population, text: str, what: str) -> tuple[Member, list[str]]:
    """The member of ``pop`` that ``--member`` names, and the choices it did not name that
    were filled in. ``text`` is ``choice=value`` pairs as ``check`` prints them (``on_omit=
    stored, on_differ=apply, ...``), in any order, or ``reference`` (the reference build).
    Only the choices that matter need naming: where the pairs leave more than one member, each
    choice not named takes the reference build's value. A pair that names no choice of
    ``pop``, or a value it does not allow, is a ``UsageError`` naming a few members."""
    members = pop.members()
    if text.strip() in ("reference", "the reference build"):
        return pop.reference_member, []
    given: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not (sep and key.strip() and value.strip()):
            given = {}
            break
        given[key.strip()] = value.strip()
    matching = [m for m in members if given and given.items() <= dict(m).items()]
    if len(matching) == 1:
        return matching[0], []
    if matching:
        ref = pop.reference_member
        filled = [k for k, _ in ref if k not in given]
        member = tuple((k, given.get(k, v)) for k, v in ref)
        assert member in matching  # a population is every combination of its allowed values
        return member, filled
    examples = "; ".join(describe(m) for m in members[:3])
    raise UsageError(
        f"argument --member: {shown_text(text, 80)} is no member of {what} "
        f"({len(members)} members, named as check prints them, e.g. {examples})"
    )
