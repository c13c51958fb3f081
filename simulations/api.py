"""The library API: check a revision, a mutant, a profile or an amendment, and read the verdicts.

Scope
    ``check`` runs an engine over the tables of a revision (or of a mutant of it, an
    implementation profile, or an amendment) and returns a ``CheckResult``: a verdict
    holds / violated / n/a for every requirement id and, for each violation, the shortest
    trace the engine found. The default engine, ``bfs``, explores every world within a
    bound, so its counterexamples are the shortest there are within it; ``hypothesis``
    samples and shrinks. ``render`` and ``to_json`` turn a result into the text and JSON the
    command line prints; ``verdict_diff``, ``keeps_promise`` and ``render_diff`` compare an
    amendment with its base; ``listing`` names the revisions, mutants, engines, bounds,
    profiles and amendments. The command line (``simulations.cli``) and the notebooks both
    use this module; it knows nothing of argument parsing.

Abstractions
    "holds" means no violation was found within the engine's budget (the bound for BFS,
    examples × steps for Hypothesis), which the header states. The P ids are the guarantees
    under study: they are always reported and, without ``strict``, never change
    ``CheckResult.exit_code``. Bad input raises ``UsageError``, whose message names the
    argument.

Source
    Requirement ids: ``model.spec``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NoReturn

from model.amend import AMENDMENTS, PROPOSALS, Amendment
from model.invariants import CHECKS, NOT_CHECKED, Check
from model.mutants import MUTANTS
from model.profiles import CLIENTS, PROFILES, Profile, ProfileError
from model.revisions import ALIASES, REVISIONS, Revision, resolve
from model.spec import REQUIREMENTS, Family
from model.tables import Tables
from model.types import Request
from model.witnesses import WITNESSES, premise_witnesses, vacuous
from simulations.engines.bounds import BOUNDS, Bound, BoundError, domain_for_wire, load_bound
from simulations.engines.cluster import explore_anywhere
from simulations.engines.domain import DEFAULT_DOMAIN, Domain, profile_domain
from simulations.engines.exploration import Exploration, Progress
from simulations.engines.explore import explore
from simulations.engines.scenarios import scenarios_for
from simulations.engines.trace import PromptFields, Trace, render_steps, replay, trace_json
from simulations.outputs.compare import Share, share_change
from simulations.usage import UsageError as UsageError
from simulations.usage import refuse_other_revision as refuse_other_revision
from simulations.usage import revision_for as revision_for
from simulations.wire.acp import meta_methods, revision_wire, wire_fields

ENGINES = {
    "bfs": "exhaustive breadth-first search within a bound (shortest counterexamples)",
    "hypothesis": "Hypothesis stateful testing (random transcripts, shrunk on failure)",
}
HOLDS, VIOLATED, NA = "holds", "violated", "n/a"


@dataclass
class CheckResult:
    revision: str
    mutant: str | None
    engine: str
    verdicts: dict[str, str]
    counterexamples: dict[str, Trace]
    shrunk: dict[str, bool]
    seconds: float
    budget: dict[str, Any] = field(default_factory=dict)
    witnesses: set[str] = field(default_factory=set)
    complete: bool = True
    profile: Profile | None = None
    amendment: Amendment | None = None
    # a profile's violated ids → the departures whose reset alone makes the id hold
    # (``with_causes``); an id with none has a note in ``cause_notes``
    causes: dict[str, list[str]] = field(default_factory=dict)
    cause_notes: dict[str, str] = field(default_factory=dict)
    # the table rows some step of the search used (bfs: its coverage; None: not known)
    fired: frozenset[tuple[str, int]] | None = None

    @property
    def tables(self) -> Tables:
        if self.amendment is not None:
            return self.amendment.tables()
        if self.profile is not None:
            return self.profile.tables()
        return MUTANTS[self.mutant].tables if self.mutant else REVISIONS[self.revision].tables

    def exit_code(self, strict: bool) -> int:
        if self.mutant is not None and self.verdicts[MUTANTS[self.mutant].violates] == VIOLATED:
            return 1  # the mutant is caught by the id it declares, whatever its family
        for rid, verdict in self.verdicts.items():
            if verdict != VIOLATED or advisory(rid):
                continue
            if strict or REQUIREMENTS[rid].family is not Family.P:
                return 1
        return 0


def tables_for(revision: str | None, mutant: str | None) -> Tables:
    revision = revision_for(revision, mutant)
    return MUTANTS[mutant].tables if mutant else REVISIONS[revision].tables


def advisory(rid: str) -> bool:
    """A rule whose breach is reported but never fails a run: a SHOULD. (T15 and T16, where
    the spec allows several answers, bind: their checks fail only on an answer none allows.)"""
    return REQUIREMENTS[rid].is_advisory


def bound_for(
    spec: str | Bound,
    revision: str,
    restarts: str = "any",
    admits: Callable[[Request], bool] | None = None,
) -> Bound:
    """A named bound or a bound file (``load_bound``), over what ``revision``'s wire can carry
    (or ``admits``: a profile's wire, ``Profile.admits``); ``restarts="same"`` keeps the
    agent's profile across restarts in every scope."""
    try:
        b = spec if isinstance(spec, Bound) else load_bound(spec)
    except BoundError as e:
        raise UsageError(f"argument --bound: {e}") from None
    b = b.restricted(resolve(revision).admits if admits is None else admits)
    if restarts == "any":
        return b
    scopes = tuple(replace(s, domain=s.domain.with_restarts("same")) for s in b.scopes)
    return replace(b, scopes=scopes)


def _nothing_advertised(profile: Profile) -> NoReturn:
    raise UsageError(
        f"argument --profile: {profile.name}: advertises_prompt = "
        f'"{profile.advertises_prompt}": no capability profile of the bound advertises that '
        f"on {profile.revision}"
    )


def advertised(b: Bound, profile: Profile | None) -> Bound:
    """``b`` as ``profile``'s agent meets it (``profile_domain`` of every scope: each
    capability profile advertises what the agent advertises, so every scope is kept); a scope
    without a capability profile is dropped, and a bound left without any is a usage error."""
    if profile is None:
        return b
    scopes = tuple(
        replace(s, domain=d) for s in b.scopes if (d := profile_domain(s.domain, profile))
    )
    if not scopes:
        _nothing_advertised(profile)
    return replace(b, scopes=scopes)


def restarts_default(profile: Profile | None) -> Literal["same", "any"]:
    """The restarts policy when none is given: a profile describes one build, which keeps its
    capability profile across restarts ("same"); a revision's agents may change it ("any")."""
    return "same" if profile is not None else "any"


def check(
    revision: str | None = None,
    mutant: str | None = None,
    engine: str = "bfs",
    seed: int = 0,
    examples: int = 200,
    steps: int = 50,
    domain: Domain | None = None,
    bound: str | Bound = "default",
    symmetry: bool = True,
    progress: Progress | None = None,
    profile: Profile | None = None,
    workers: int = 1,
    amendment: Amendment | None = None,
) -> CheckResult:
    """Run ``engine`` and return a verdict for every requirement id.

    With ``profile`` the agent is that implementation profile (over its revision's tables);
    with ``amendment`` the spec is its base revision with the amendment's edits. Without
    ``domain``, restarts keep the agent's capability profile for a profile (it describes one
    build, ``restarts_default``) and may change it otherwise.
    """
    if domain is None:
        domain = DEFAULT_DOMAIN.with_restarts(restarts_default(profile))
    if amendment is not None:
        if mutant is not None or profile is not None:
            raise UsageError(
                "argument --amend: an amendment is checked on its own (no --mutant or --profile)"
            )
        if revision is not None and revision_for(revision) != amendment.base:
            raise UsageError(
                f"argument --amend: {amendment.name} amends {amendment.base}, not "
                f"{revision_for(revision)} (drop --revision)"
            )
        revision = amendment.base
    if profile is not None:
        if mutant is not None and profile.mutant != mutant:  # the profile's knobs over it
            try:
                profile = profile.with_mutant(mutant)
            except ProfileError as e:
                raise UsageError(f"argument --mutant: {e}") from None
        refuse_other_revision(profile, revision)
        revision = profile.revision
    revision = revision_for(revision, mutant)
    tables = tables_for(revision, mutant)
    if profile is not None:
        tables = profile.tables()
    if amendment is not None:
        tables = amendment.tables()
    if engine not in ENGINES:
        raise UsageError(
            f"argument --engine: unknown engine {engine!r} (choose from {', '.join(ENGINES)})"
        )
    rev = amendment.revision() if amendment is not None else REVISIONS[revision]
    if engine == "bfs":
        wire = None if profile is None else profile.admits()
        b = advertised(bound_for(bound, revision, domain.restarts, wire), profile)
        result = from_exploration(
            explore_anywhere(  # ``explore``, on the cluster ``--cluster`` attached if any
                tables,
                b,
                symmetry=symmetry,
                checks=stated_checks(rev),
                progress=progress,
                workers=workers,
                keep=b.keep,
                witnesses=premise_witnesses(rev.states),
                local=explore,
            ),
            revision,
            mutant,
            profile,
            rev,
        )
        result.amendment = amendment
        return result
    admits = rev.admits if profile is None else profile.admits()
    domain = domain_for_wire(domain.restrict(admits), tables.replies)
    if profile is not None:
        domain = profile_domain(domain, profile) or _nothing_advertised(profile)
    t0 = time.perf_counter()
    # Hypothesis is imported only by this engine (0.1 s of every other run's start)
    from simulations.engines.stateful import findings_of, machine_class, run

    # 1. one broad run that records every id it sees violated
    broad = machine_class(tables, domain, mode="collect")
    run(broad, examples=examples, steps=steps, seed_value=seed)
    found = findings_of(broad)
    # 2. the named scenarios, replayed like Hypothesis @example inputs
    from_scenarios: dict[str, Trace] = {}
    for trace in scenarios_for(domain).values():
        if not all(admits(r) for r in trace.requests):
            continue  # the scenario says something this revision's wire cannot
        for step in replay(trace, tables):
            for rid in step.violated:
                from_scenarios.setdefault(rid, Trace(trace.profile, trace.requests))
    targets = set(found.violations) | set(from_scenarios)
    if mutant is not None:
        targets.add(MUTANTS[mutant].violates)
    targets = {rid for rid in targets if rev.states(rid)}  # the others' verdicts are n/a
    # 3. one focused run per id, so Hypothesis shrinks that id's counterexample
    counterexamples: dict[str, Trace] = {}
    shrunk: dict[str, bool] = {}
    for rid in sorted(targets):
        focused = machine_class(tables, domain, checks=[rid], mode="assert")
        declared = mutant is not None and rid == MUTANTS[mutant].violates
        run(
            focused,
            examples=max(examples, 1000) if declared else examples,
            steps=steps,
            seed_value=seed,
        )
        failure = findings_of(focused).failure
        if failure is not None:
            counterexamples[rid], shrunk[rid] = failure[1], True
        else:
            seen = [t for t in (found.violations.get(rid), from_scenarios.get(rid)) if t]
            if seen:
                counterexamples[rid], shrunk[rid] = min(seen, key=len), False
    return CheckResult(
        revision,
        mutant,
        engine,
        _verdicts(counterexamples, rev),
        counterexamples,
        shrunk,
        time.perf_counter() - t0,
        {"examples": examples, "steps": steps, "seed": seed, "restarts": domain.restarts},
        found.witnesses,
        profile=profile,
        amendment=amendment,
    )


REVISION_ITSELF = "the revision itself"  # its reference agent violates the id too
# the knobs that say what the agent advertises: kept when the reference agent is re-run for
# causes, so an id is put down to the revision only if its agent advertising the same breaks it
ADVERTISING = ("advertises_prompt", "advertises_methods")
EACH_ALONE = "each alone"  # every knob named breaks it alone: all of them must be reset
TOGETHER = "several departures together"  # only a combination of departures breaks it


def with_causes(result: CheckResult, rerun: Callable[[Profile], CheckResult]) -> CheckResult:
    """``result`` (a profile's check) with, for each violated id, the departures that cause it.

    A knob causes an id when the id holds once that knob alone is reset to the revision's
    reference value (``rerun`` checks the profile so edited, under the same bound, restarts and
    engine). For an id no single reset fixes, ``cause_notes`` says why: ``REVISION_ITSELF`` when
    the revision's reference agent, advertising what the profile advertises (``ADVERTISING``),
    violates it as well; ``EACH_ALONE`` when several knobs each break it on their own (with
    the same advertisements; they are listed, and all must be reset); else ``TOGETHER``. A
    note that blames the revision (or the mutant) under a counterexample its reference agent
    does not break (the id replayed on it holds) names the departures behind that
    counterexample instead: those whose reset alone makes it hold, "(this counterexample; the
    revision itself breaks it too, another way)".

    A profile has few departures: this costs one run per departure, and only for an id left
    without a cause one run of the reference agent and one per knob alone (runs of the same
    knobs are shared: with one or two departures there is nothing more to run). An
    interrupted re-run leaves the causes out rather than guess.
    """
    p = result.profile
    violated = [rid for rid, v in result.verdicts.items() if v == VIOLATED]
    if p is None or not violated or not result.complete:
        return result
    runs: dict[tuple[object, ...], dict[str, str]] = {_knobs_key(p): result.verdicts}

    def verdicts(**knobs: Any) -> dict[str, str]:
        """The verdicts of the reference agent with ``knobs`` set as the profile sets them (a
        knob the others' reset leaves without effect is reset too: ``reference_with``)."""
        q = p.reference_with(knobs)
        key = _knobs_key(q)
        if key not in runs:
            r = rerun(q)
            if not r.complete:
                raise _Incomplete
            runs[key] = r.verdicts
        return runs[key]

    departures = p.departures()
    # what the agent advertises stays as the profile says when the reference agent is judged:
    # "the revision itself" means its reference agent advertising the same breaks the id
    shown = {k: v for k, v in departures.items() if k in ADVERTISING}
    try:
        causes: dict[str, list[str]] = {rid: [] for rid in violated}
        for knob in departures:
            reset = verdicts(**{k: v for k, v in departures.items() if k != knob})
            for rid in violated:
                if reset.get(rid) == HOLDS:
                    causes[rid].append(knob)
        notes: dict[str, str] = {}
        for rid in [r for r, knobs in causes.items() if not knobs]:
            if verdicts(**shown).get(rid) == VIOLATED:  # the build under the knobs breaks it too
                notes[rid] = f"the mutant {p.mutant} itself" if p.mutant else REVISION_ITSELF
                continue
            alone = [
                k
                for k, v in departures.items()
                if k not in shown and verdicts(**{**shown, k: v}).get(rid) == VIOLATED
            ]
            causes[rid], notes[rid] = alone, EACH_ALONE if alone else TOGETHER
    except _Incomplete:
        return result
    for rid, note in notes.items():  # the counterexample shown may be the knobs', not its own
        trace = result.counterexamples.get(rid)
        if note in (EACH_ALONE, TOGETHER) or trace is None or _breaks(trace, rid, p, shown):
            continue
        behind = [
            k
            for k in departures
            if k not in shown
            and not _breaks(trace, rid, p, {j: v for j, v in departures.items() if j != k})
        ]
        named = ", ".join(f"{k} = {json.dumps(departures[k])}" for k in behind) or TOGETHER
        notes[rid] = f"{named} (this counterexample; {note} breaks it too, another way)"
    result.causes, result.cause_notes = causes, notes
    return result


def _breaks(trace: Trace, rid: str, p: Profile, knobs: dict[str, Any]) -> bool:
    """``trace`` violates ``rid`` on the reference agent with ``knobs`` set as ``p`` sets them."""
    return any(rid in s.violated for s in replay(trace, p.reference_with(knobs).tables()))


class _Incomplete(Exception):
    """A re-run of ``with_causes`` was interrupted."""


def _knobs_key(p: Profile) -> tuple[object, ...]:
    return (p.revision, *p.knobs().items())


def _open_lines(result: CheckResult) -> list[str]:
    """The profile's departures that answer a question the texts leave open: choices, not
    faults (``Profile.open_choices``)."""
    p = result.profile
    choices = {} if p is None else p.open_choices()
    if p is None or not choices:
        return []
    lines = ["", "open choices (the texts leave them open; no rule is charged for them):"]
    for knob, why in choices.items():
        lines.append(f"  {knob} = {json.dumps(getattr(p, knob))}: {why}")
    return lines


def _causes_lines(result: CheckResult) -> list[str]:
    p = result.profile
    if p is None or not result.causes:
        return []
    lines = [
        "",
        "causes (the departure that, reset alone to the reference, makes the id hold):",
    ]
    for rid, knobs in result.causes.items():
        note = result.cause_notes.get(rid)
        named = [f"{k} = {json.dumps(getattr(p, k))}" for k in knobs]
        if note == EACH_ALONE:
            why = " and ".join(named) + " (each alone breaks it: reset all of them)"
        else:
            why = ", ".join(named) or note or TOGETHER
        lines.append(f"  {rid:4s} ← {why}")
    return lines


# The families every verdict table lists; T and A ids appear only for a revision that states them.
_LISTED = frozenset({Family.R, Family.S, Family.P})


def stated_checks(rev: Revision) -> list[Check]:
    """The checks of the ids ``rev`` states, in ``CHECKS`` order: the only ones a verdict of
    ``rev`` reads (``_verdicts`` drops the others' counterexamples), so the only ones ``check``
    evaluates. The states, edges and witnesses explored do not depend on the checks."""
    return [c for c in CHECKS.values() if rev.states(c.rid)]


def _verdicts(counterexamples: dict[str, Trace], rev: Revision) -> dict[str, str]:
    """Every R, S and P id, plus any other id the revision states: n/a if not checkable or not
    a rule of the revision, violated if it has a counterexample, else holds. Counterexamples of
    ids the revision does not state are dropped.
    """
    for rid in [r for r in counterexamples if not rev.states(r)]:
        del counterexamples[rid]
    return {
        rid: NA
        if rid in NOT_CHECKED or not rev.states(rid)
        else VIOLATED
        if rid in counterexamples
        else HOLDS
        for rid in REQUIREMENTS
        if REQUIREMENTS[rid].family in _LISTED or rev.states(rid)
    }


def _na_reason(rid: str, revision: str, amendment: Amendment | None = None) -> str:
    """Why ``rid`` is n/a on ``revision``: not one of its rules (or one ``amendment`` retires),
    else why it has no check (``NOT_CHECKED``, whose reasons are true of every revision that
    states the id)."""
    if amendment is not None and rid in amendment.retires():
        return f"retired by {amendment.name} (its wire answers a status instead of an error)"
    if not REVISIONS[revision].states(rid):
        return f"not a rule of {revision}"
    return NOT_CHECKED[rid]


def _states(result: CheckResult) -> Callable[[str], bool]:
    """The ids a result's revision states (an amendment's: less those it retires)."""
    if result.amendment is not None:
        return result.amendment.revision().states
    return REVISIONS[result.revision].states


def from_exploration(
    ex: Exploration,
    revision: str,
    mutant: str | None,
    profile: Profile | None = None,
    rev: Revision | None = None,
) -> CheckResult:
    """Verdicts of one exhaustive run; each counterexample is a shortest one within the bound.
    ``rev``: the rules judged, when not ``revision``'s own (an amendment's, ``retires``)."""
    rev = rev or REVISIONS[revision]
    traces = {rid: ex.trace(rid) for rid in ex.violated if rev.states(rid)}
    return CheckResult(
        revision,
        mutant,
        "bfs",
        _verdicts(traces, rev),
        traces,
        dict.fromkeys(traces, True),
        ex.seconds,
        {
            "bound": ex.bound.name,
            "scopes": [s.name for s in ex.bound.scopes],
            "symmetry": ex.symmetry,
            "restarts": ex.bound.scopes[0].domain.restarts,
            "states": ex.states,
            "edges": ex.edges,
            "depth": ex.depth,
            "transitions": ex.transitions,
            "complete": ex.complete,
        },
        set(ex.witness_at),
        ex.complete,
        profile,
        fired=frozenset(ref for ref, n in ex.rows.items() if n),
    )


def _took(result: CheckResult, wall: float | None) -> str:
    """The header's time: the command's wall clock with the search's share of it, where the
    command line gives it (``wall``), else the search's own seconds."""
    if wall is None:
        return f"{result.seconds:.1f}s"
    return f"wall {max(wall, result.seconds):.1f}s (search {result.seconds:.1f}s)"


def _header(result: CheckResult, wall: float | None = None) -> str:
    b = result.budget
    what = f"mutant {result.mutant} of {result.revision}" if result.mutant else result.revision
    if result.profile is not None:
        what = f"profile {result.profile.name} ({result.revision})"
        if result.profile.client:
            who = f"{result.profile.name} with client {result.profile.client}"
            what = f"profile {who} ({result.revision})"
        if result.profile.mutant:
            what = what[:-1] + f", over mutant {result.profile.mutant})"
    if result.amendment is not None:
        what = f"amendment {result.amendment.name} of {result.revision}"
    if result.engine == "bfs":
        done = "" if result.complete else "  INTERRUPTED: partial exploration"
        return (
            f"acp-sysprompt check: {what}  engine=bfs  bound={b['bound']} "
            f"({'+'.join(b['scopes'])})  {b['states']:,} states  {_edges(b['edges'])}  "
            f"{b['transitions']:,} transitions checked  "
            f"depth {b['depth']}  symmetry={'on' if b['symmetry'] else 'off'}  "
            f"restarts={b['restarts']}{_why_restarts(result)}  {_took(result, wall)}{done}"
        )
    return (
        f"acp-sysprompt check: {what}  engine={result.engine}  seed={b['seed']}  "
        f"budget={b['examples']} examples × {b['steps']} steps  "
        f"restarts={b['restarts']}{_why_restarts(result)}  {_took(result, wall)}"
    )


def _why_restarts(result: CheckResult) -> str:
    """A profile run under "same" says why: one build keeps its capabilities across restarts."""
    if result.profile is not None and result.budget.get("restarts") == "same":
        return " (one build: it keeps its capabilities across restarts)"
    return ""


def _fields(result: CheckResult) -> PromptFields:
    """The prompt fields as the result's revision's wire carries them (in ``_meta`` where a
    profile's client puts them there, ``meta_methods``): a step shows no field its wire lacks."""
    meta = meta_methods(result.profile) if result.profile is not None else ()
    return wire_fields(revision_wire(result.revision), meta)


def _edges(edges: int | None) -> str:
    """Distinct edges between distinct states (the graph's), beside the transitions checked
    (every request sent, self-loops and repeats included: the progress line's count)."""
    return "edges not kept" if edges is None else f"{edges:,} edges"


def render(result: CheckResult, wall: float | None = None) -> str:
    """The check's verdicts as text; ``wall``: the command's seconds so far, for the header
    (the command line's; without it the header gives the search's own seconds)."""
    lines = [
        _header(result, wall),
        "holds = no violation found within the budget; n/a = not a checkable behaviour here",
        "",
        f"{'id':4s} {'keyword':16s} {'verdict':9s} check",
    ]
    for rid, verdict in result.verdicts.items():
        r = REQUIREMENTS[rid]
        how = (
            CHECKS[rid].name
            if verdict != NA
            else _na_reason(rid, result.revision, result.amendment)
        )
        mark = "✗ " if verdict == VIOLATED else "  "
        why = vacuous(rid, result.witnesses) if verdict == HOLDS else None
        if why is not None:
            how += f"  (vacuous: {why})"
        lines.append(f"{rid:4s} {r.keyword.value:16s} {mark}{verdict:7s} {how}")
    for rid, trace in result.counterexamples.items():
        r = REQUIREMENTS[rid]
        kind = (
            "shortest within the bound"
            if result.engine == "bfs"
            else "shrunk"
            if result.shrunk[rid]
            else "first found, not shrunk"
        )
        lines += [
            "",
            f"{rid} violated ({r.keyword.value})  {len(trace)} steps ({kind})",
            f'  "{r.text}"',
            f"  source: {r.source}",
            render_steps(trace, result.tables, _states(result), _fields(result)),
        ]
    violated_rules = [
        rid + (f" ({REQUIREMENTS[rid].keyword.value}, advisory)" if advisory(rid) else "")
        for rid, v in result.verdicts.items()
        if v == VIOLATED and REQUIREMENTS[rid].family is not Family.P
    ]
    violated_props = [
        rid
        for rid, v in result.verdicts.items()
        if v == VIOLATED and REQUIREMENTS[rid].family is Family.P
    ]
    lines += [
        "",
        f"rules violated: {', '.join(violated_rules) or 'none'};  "
        f"properties (P) violated: {', '.join(violated_props) or 'none'}",
    ]
    lines += _causes_lines(result)
    lines += _open_lines(result)
    return "\n".join(lines)


def to_json(result: CheckResult) -> dict[str, Any]:
    return {
        "revision": result.revision,
        "mutant": result.mutant,
        "profile": None if result.profile is None else result.profile.name,
        "profile_knobs": None if result.profile is None else result.profile.knobs(),
        "client": None if result.profile is None else result.profile.client or None,
        "causes": None if result.profile is None else result.causes,
        "cause_notes": None if result.profile is None else result.cause_notes,
        "open_choices": None if result.profile is None else result.profile.open_choices(),
        "amendment": None if result.amendment is None else result.amendment.describe(),
        "engine": result.engine,
        "restarts": result.budget.get("restarts"),
        "verdicts": result.verdicts,
        "counterexamples": {
            rid: trace_json(t, result.tables, _states(result), _fields(result))
            for rid, t in result.counterexamples.items()
        },
        "shrunk": result.shrunk,
        "budget": result.budget,
        "witnesses": sorted(result.witnesses),
        "witnesses_missed": sorted(set(WITNESSES) - result.witnesses, key=lambda w: int(w[1:])),
        "vacuous": {
            rid: why
            for rid, v in result.verdicts.items()
            if v == HOLDS and (why := vacuous(rid, result.witnesses)) is not None
        },
        "seconds": round(result.seconds, 3),
        "complete": result.complete,
    }


@dataclass
class Change:
    """One id whose verdict an amendment changes, with the counterexample that goes or comes."""

    rid: str
    before: str
    after: str
    trace: Trace | None  # the base's counterexample that disappears, or the one that appears


def verdict_diff(base: CheckResult, amended: CheckResult) -> list[Change]:
    """Every id whose verdict differs between the base revision and the amendment."""
    out = []
    for rid, before in base.verdicts.items():
        after = amended.verdicts.get(rid, NA)
        if after != before:
            trace = (
                base.counterexamples.get(rid)
                if before == VIOLATED
                else amended.counterexamples.get(rid)
            )
            out.append(Change(rid, before, after, trace))
    return out


def keeps_promise(amendment: Amendment, diff: list[Change]) -> bool:
    """Every id it claims to fix goes from violated to holds, and nothing starts failing."""
    fixed = {c.rid for c in diff if c.before == VIOLATED and c.after == HOLDS}
    broken = [c for c in diff if c.after == VIOLATED]
    return set(amendment.fixes) <= fixed and not broken


def render_diff(base: CheckResult, amended: CheckResult, diff: list[Change]) -> str:
    a = amended.amendment
    assert a is not None
    lines = [
        "",
        f"verdict diff: amendment {a.name} against {base.revision} "
        f"({len(diff)} id{'s' if len(diff) != 1 else ''} change)",
        f"  edits: {', '.join(f'{k} = {v!r}' for k, v in a.edits)}",
    ]
    if a.sentence:
        lines.append(f'  sentence: "{a.sentence}"')
    for c in diff:
        if c.before == VIOLATED and c.trace is not None:
            note = f"its {len(c.trace)}-step counterexample disappears:"
        elif c.after == VIOLATED and c.trace is not None:
            note = f"a {len(c.trace)}-step counterexample appears:"
        else:
            note = ""
        lines.append(f"  {c.rid:4s} {_change(c.before, c.after)}  {note}")
        if c.trace is not None:
            tables = base.tables if c.before == VIOLATED else amended.tables
            shown = render_steps(c.trace, tables, REVISIONS[base.revision].states, _fields(base))
            lines += ["    " + line for line in shown.splitlines()]
    claimed = ", ".join(a.fixes) or "nothing"
    verdict = "kept" if keeps_promise(a, diff) else "NOT kept"
    lines.append(f"  claims to fix {claimed}: {verdict}")
    return "\n".join(lines)


def _change(before: str, after: str) -> str:
    """``violated → holds: from all to none``: one build's change in the words a population's
    share change is said in (``share_change``); n/a on either side as the verdicts alone."""
    if NA in (before, after):
        return f"{before} → {after}"
    return share_change(Share(before == VIOLATED, 1, True), Share(after == VIOLATED, 1, True))


def diff_json(diff: list[Change], base: CheckResult, amended: CheckResult) -> list[Any]:
    """``diff`` as data; ``changed`` is the key a population's diff shares (there it is false
    for an id whose verdict stays and whose count of losing pairs alone changes), and every
    id ``verdict_diff`` lists has a changed verdict."""
    return [
        {
            "id": c.rid,
            "before": c.before,
            "after": c.after,
            "changed": c.before != c.after,
            "counterexample": None
            if c.trace is None
            else trace_json(
                c.trace,
                base.tables if c.before == VIOLATED else amended.tables,
                REVISIONS[base.revision].states,
                _fields(base),
            ),
        }
        for c in diff
    ]


def listing() -> dict[str, Any]:
    return {
        "revisions": [
            {
                "name": r.name,
                "title": r.title,
                "source": r.source,
                "rules": sorted(r.rules, key=lambda x: ("RSPTA".index(x[0]), int(x[1:]))),
                "aliases": sorted(a for a, t in ALIASES.items() if t == r.name),
            }
            for r in REVISIONS.values()
        ],
        "mutants": [
            {
                "name": m.name,
                "revision": m.revision,
                "violates": m.violates,
                "summary": m.summary,
            }
            for m in MUTANTS.values()
        ],
        "engines": [{"name": k, "summary": v} for k, v in ENGINES.items()],
        "bounds": [b.describe() for b in BOUNDS.values()],
        "profiles": [
            {
                "name": p.name,
                "revision": p.revision,
                "summary": p.summary,
                "source": p.source,
                "knobs": p.knobs(),
            }
            for p in PROFILES.values()
        ],
        "clients": [
            {
                "name": c.name,
                "revision": c.revision or None,
                "summary": c.summary,
                "source": c.source,
                "knobs": dict(c.knobs),
            }
            for c in CLIENTS.values()
        ],
        "amendments": [a.describe() for a in AMENDMENTS.values()],
        "proposals": [a.describe() for a in PROPOSALS.values()],
    }
