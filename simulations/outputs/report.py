"""The reviewer's report: verdict matrix, shortest counterexamples, ACP v1's population, kill
matrix, questions for the RFD author.

Scope
    ``build_report(out)`` explores every *subject* — a revision, a revision with a restricted
    population of agents, or an implementation profile — exhaustively within the ``default``
    bound, and writes ``report.md``: the verdict matrix (subject × P1–P9, ✓ / ✗ / n/a, and the
    revision's rules that broke), each ✗ linked to a directory with its shortest counterexample
    in five forms plus a picture of the path; with ``stable_sections``, ACP v1 as stabilised
    judged over every agent and client it allows, each shipped amendment in one sentence and
    the findings to take upstream; then the kill matrix (mutant × engine: the exhaustive
    explorer and Hypothesis, each run focused on the id the mutant declares) and the open
    questions' witnesses (``model.questions``).

Abstractions
    A subject's population is the set of capability profiles its agents may start or restart
    with (``caps``) and whether a restart may change it (``restarts``): "a final-RFD client
    with an agent that predates the field" is the final revision with agents that never
    advertise ``systemPrompt``. Hypothesis in the kill matrix runs 300 examples × 50 steps,
    seed 0; the explorer uses the smallest bound that can show the mutant.

Source
    model/spec.py (P1–P9); model.revisions, model.profiles, model.mutants.
"""

from __future__ import annotations

import multiprocessing
import shlex
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from model.amend import AMENDMENTS, Amendment
from model.mutants import MUTANTS
from model.population import describe
from model.profiles import PROFILES
from model.questions import QUESTIONS, Witness
from model.revisions import REVISIONS
from model.spec import P_IDS, REQUIREMENTS
from model.tables import Tables
from model.types import PromptCap, Slot
from model.witnesses import vacuous
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.domain import domain_for, profile_domain
from simulations.engines.exploration import Exploration
from simulations.engines.explore import explore, labelled, smallest_bound_showing
from simulations.engines.population import HELD_BY_ALL, Judged
from simulations.engines.stateful import findings_of, machine_class, run
from simulations.engines.trace import Trace, replay, request_text
from simulations.outputs.population import check_population, rule_checks
from simulations.wire.acp import meta_methods, revision_wire, wire_fields


@dataclass(frozen=True)
class Subject:
    label: str
    revision: str
    profile: str | None = None
    caps: tuple[PromptCap, ...] | None = None  # systemPrompt capabilities agents may advertise
    restarts: Literal["any", "same"] = "any"
    note: str = ""

    def tables(self) -> Tables:
        """The agent: the profile's tables, or the revision's reference tables."""
        return PROFILES[self.profile].tables() if self.profile else REVISIONS[self.revision].tables

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.label).strip("-").lower()


_NONE = (PromptCap.NONE,)
SUBJECTS: tuple[Subject, ...] = (
    Subject("rfd-draft", "rfd-draft", note="draft clients; agents with and without support"),
    Subject(
        "rfd-draft client, agent that predates the field",
        "rfd-draft",
        caps=_NONE,
        note="the client sends; the agent ignores the unknown param",
    ),
    Subject("pr-1494", "pr-1494", note="the draft as implemented; null = omitted"),
    Subject(
        "rfd-final client, agent that predates the field",
        "rfd-final",
        caps=_NONE,
        restarts="same",
        note="no capability, so the client never sends",
    ),
    Subject("rfd-final, stable agent", "rfd-final", restarts="same"),
    Subject(
        "rfd-final, restart may change the agent",
        "rfd-final",
        note="a restart may come back with another capability profile",
    ),
    Subject("v1-stable, stable agent", "v1-stable", restarts="same"),
    Subject("v1-stable, restart may change the agent", "v1-stable"),
    Subject("v2-draft, restart may change the agent", "v2-draft"),
    Subject(
        "alt-instructions, restart may change the agent",
        "alt-instructions",
        note="the alternative RFD, not adopted",
    ),
    *(
        Subject(
            f"profile {p.name}",
            p.revision,
            profile=p.name,
            # the profiled agent has the feature, unless it says what it advertises
            caps=(PromptCap.APPEND, PromptCap.OVERRIDE) if p.prompt_caps() is None else None,
            restarts="same",
            note=p.summary,
        )
        for p in PROFILES.values()
    ),
)


def subject_bound(s: Subject, bound: str = "default") -> Bound:
    """The bound a row explores: over the subject's wire (a profile's own, ``Profile.admits``:
    one that restores by re-send is re-sent the prompt, as ``check --profile`` sends it)."""
    admits = REVISIONS[s.revision].admits if s.profile is None else PROFILES[s.profile].admits()
    b = BOUNDS[bound].restricted(admits)
    scopes = []
    for sc in b.scopes:
        d = sc.domain.with_restarts(s.restarts)
        if s.caps is not None:
            d = replace(d, profiles=tuple(p for p in d.profiles if p.system_prompt in s.caps))
            if not d.profiles:
                continue
        if s.profile is not None:  # what the profiled agent advertises, and its size limit
            narrowed = profile_domain(d, PROFILES[s.profile])
            if narrowed is None:
                continue
            d = narrowed
        scopes.append(replace(sc, domain=d))
    return replace(b, scopes=tuple(scopes))


@dataclass
class Row:
    subject: Subject
    exploration: Exploration
    verdicts: dict[str, str]  # P id → holds / violated
    rules_broken: list[str]


def verdict_row(s: Subject, bound: str = "default", workers: int = 1) -> Row:
    tables = s.tables()
    ex = explore(tables, subject_bound(s, bound), workers=workers)
    rev = REVISIONS[s.revision]
    verdicts = {p: "violated" if p in ex.first else "holds" for p in P_IDS}
    rules = [r for r in ex.violated if r[0] != "P" and rev.states(r)]
    return Row(s, ex, verdicts, rules)


@dataclass
class Kill:
    mutant: str
    declares: str
    bfs: int | None  # shortest length, None = not killed
    bfs_bound: str | None
    hypothesis: int | None  # shrunk length, None = not killed
    seconds: float


def kill_row(name: str) -> Kill:
    m = MUTANTS[name]
    t0 = time.perf_counter()
    bfs = bfs_bound = None
    ex = smallest_bound_showing(
        m.tables, m.violates, None if m.revision == "rfd-final" else m.admits
    )
    if m.violates in ex.first:
        bfs, bfs_bound = ex.length(m.violates), ex.bound.name
    domain = domain_for(m.revision, m.admits)
    cls = machine_class(m.tables, domain, checks=[m.violates])
    run(cls, examples=300, steps=50, seed_value=0)
    failure = findings_of(cls).failure
    hyp = len(failure[1]) if failure is not None and failure[0] == m.violates else None
    return Kill(name, m.violates, bfs, bfs_bound, hyp, time.perf_counter() - t0)


def kill_rows(names: tuple[str, ...], jobs: int = 1) -> Iterator[Kill]:
    """``kill_row`` for each mutant, in order; with ``jobs`` > 1 that many processes share them.

    Each row is a pure function of the mutant's name (BFS, and Hypothesis with a fixed seed and
    no example database), so the rows do not depend on which process computed them.
    """
    if jobs <= 1 or len(names) <= 1:
        yield from map(kill_row, names)
        return
    context = multiprocessing.get_context("spawn")  # no inherited state in the workers
    # Ctrl-C reaches the whole process group: the workers ignore it, and leaving the block
    # (normally or by the interrupt) terminates them
    with context.Pool(
        jobs, initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN)
    ) as pool:
        yield from pool.imap(kill_row, names)


def observations(w: Witness, tables: Tables) -> list[tuple[int | None, Slot | None]]:
    """What the client (and the system slot) showed at each step: error code, turn slot."""
    return [
        (r.step.reply.code, r.step.reply.slot) for r in replay(Trace(w.profile, w.requests), tables)
    ]


def _questions() -> list[str]:
    lines = [
        "",
        "## Questions for the RFD author",
        "",
        "Each witness is one transcript and two agents the final RFD's text both allows; the "
        "step where what the client observes differs is shown for each.",
        "",
    ]
    for q in QUESTIONS:
        lines.append(f"### {q.qid}: {q.title}")
        lines += ["", q.ask, ""]
        w = q.witness
        if w is None:
            lines += [f"Modelling choice: {q.choice}", ""]
            continue
        a, b = observations(w, w.a), observations(w, w.b)
        i = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
        lines += [
            "| # | request | " + w.a_label + " | " + w.b_label + " |",
            "|---:|---|---|---|",
        ]
        for j, req in enumerate(w.requests[: i + 1]):
            mark = " **←**" if j == i else ""
            lines.append(f"| {j + 1} | `{request_text(req)}` | {_obs(a[j])} | {_obs(b[j])}{mark} |")
        lines.append("")
    return lines


def _obs(o: tuple[int | None, Slot | None]) -> str:
    code, slot = o
    if code is not None:
        return f"error {code}"
    return "ok" if slot is None else "slot [" + ", ".join(slot) + "]"


def _mark(v: str) -> str:
    return {"holds": "✓", "violated": "✗", "n/a": "n/a"}[v]


def _write_counterexample(row: Row, rid: str, out: Path) -> Path:
    from simulations.outputs.forms import write_counterexample
    from simulations.outputs.pictures import draw_graph

    s = row.subject
    d = out / "counterexamples" / s.slug / rid
    tables = s.tables()
    write_counterexample(
        d, row.exploration.trace(rid), tables, rid, s.revision, None, profile=s.profile
    )
    path = row.exploration.nodes_on(rid)
    meta = meta_methods(PROFILES[s.profile]) if s.profile in PROFILES else ()
    fields = wire_fields(revision_wire(s.revision), meta)
    g = labelled(row.exploration, s.revision, nodes=path, fields=fields)
    draw_graph(g, d / "path.png", d / "path.svg", path, title=f"{s.label}: {rid}")
    return d


_P9_GAP = (
    "every revision leaves it open; closing it takes a wire change, which no choice of the v1 "
    "text can make: the shipped proposal echo-effective-prompt (the agent echoes the "
    "session's systemPrompt in its load, resume and fork answers) gives it to every pair "
    "(check --amend echo-effective-prompt)."
)


def _stable_sections(
    rows: list[Row], out: Path, bound: str, jobs: int, say: Callable[[str], None]
) -> list[str]:
    """The choices matrix, the amendments and the per-finding blocks for ACP v1 as stabilised
    (written when the report's subjects include v1-stable with restarts that may change it)."""
    by_label = {row.subject.label: row for row in rows}
    base = by_label.get("v1-stable, restart may change the agent")
    if base is None:
        return []
    lines: list[str] = []
    say("checking every agent and client v1-stable allows")
    b = subject_bound(base.subject, bound)
    pop = check_population("v1-stable", b, "any", workers=jobs)
    j = pop.judged
    lines += [
        "",
        "## ACP v1 as stabilised: every agent and client it allows",
        "",
        f"The stabilised text leaves choices open; every combination is a conforming agent × "
        f"client pair ({len(j.outcomes)} pairs: {pop.population.agents()} agents × "
        f"{pop.population.clients()} clients), each checked exhaustively within the `{bound}` "
        "bound (`acp-sysprompt check --revision v1-stable`; the reference build alone is "
        "`--reference`). Choices: "
        + "; ".join(
            f"`{c.name}` ({c.leaves_open}: {' | '.join(c.values)})" for c in pop.population.choices
        )
        + ". Lost where = the smallest combinations of choice values under which every pair "
        "loses the property (n = shortest counterexample).",
        "",
        "| P | verdict | lost by | lost where |",
        "|---|---|---|---|",
    ]
    for p in P_IDS:
        v = j.verdict(p)
        why = vacuous(p, j.witnesses()) if v == HELD_BY_ALL else None
        where = "; ".join(f"{_choices(x) or 'every pair'} ({o.lengths[p]})" for x, o in j.losing(p))
        verdict = v + (f" (vacuous: {why})" if why else "")
        lost = f"{len(j.losers(p))} of {len(j.outcomes)}"
        lines.append(f"| {p} | {verdict} | {lost} | {where or '—'} |")
    say("checking the shipped amendments over every pair they allow")
    amended = {
        a.name: check_population(
            "v1-stable", b, "any", a.population(), workers=jobs, extra=rule_checks(a)
        )
        for a in AMENDMENTS.values()
    }
    lines += [
        "",
        "## Amendments: one sentence each",
        "",
        "Each shipped amendment (`acp-sysprompt check --amend NAME`) edits the text: `must` "
        "narrows a choice, a rule adds an id with its own check. Judged over every pair the "
        f"amended text allows, in the `{bound}` bound. Claims kept = every P id it names holds "
        "for every pair.",
        "",
        "| amendment | edits | pairs | holds for every pair | still lost | claims kept |",
        "|---|---|---|---|---|---|",
    ]
    for a in AMENDMENTS.values():
        r = amended[a.name].judged
        held = [p for p in P_IDS if r.verdict(p) == HELD_BY_ALL]
        left = [p for p in P_IDS if r.verdict(p) != HELD_BY_ALL]
        kept = set(a.fixes) <= set(held) and not r.rules_broken()
        edits = ", ".join(f"`{e}`" for e in a.edit_lines())
        lines.append(
            f"| `{a.name}` | {edits} | {len(r.outcomes)} | {', '.join(held) or '—'} | "
            f"{', '.join(left) or '—'} | {'yes' if kept else '**NO**'} |"
        )
    lines += ["", "Their sentences:", ""]
    lines += [f"- `{a.name}`: {a.sentence}" for a in AMENDMENTS.values()]
    lines += [
        "",
        "## Findings to take upstream (ACP v1 as stabilised)",
        "",
        "One block per guarantee the stabilised text does not give, ready to paste as it is "
        "into an issue on agentclientprotocol/agent-client-protocol: the property, the pairs "
        "that lose it named by the choices that matter, the shortest counterexample of the "
        "reference build's way of losing it as a diagram with every reply, the first shipped "
        "amendment that closes it, and the command that writes the counterexample (its "
        "JSON-RPC transcript validates against the SDK 2.4.0 v1 schema).",
    ]
    for p in P_IDS:
        if base.verdicts[p] != "violated":
            continue
        fix = next(
            (a for a in AMENDMENTS.values() if amended[a.name].judged.verdict(p) == HELD_BY_ALL),
            None,
        )
        lines += ["", upstream_block(p, j, fix, amended[fix.name].judged if fix else None, bound)]
    return lines


def upstream_block(
    p: str, j: Judged, fix: Amendment | None, fixed: Judged | None, bound: str
) -> str:
    """One finding to take upstream, to paste as it is (``simulations.outputs.paste``): the
    property quoted, how many pairs of ``j`` lose it and the way the reference build loses it
    (its heading "lost where" with the shortest counterexample, named by its choices in
    words), the rules that path breaks, the diagram with every reply, the amendment ``fix``
    that closes it (``fixed``: its population judged) and last the command that writes it."""
    from simulations.outputs.paste import member_words, paste_body, quote

    ref = j.population.reference_member
    ways = j.losing(p)
    where, o = min(ways, key=lambda w: (not set(w[0]) <= set(ref), w[1].lengths[p]))
    trace, tables = o.traces[p], j.population.tables(o.member)
    others = len(ways) - 1
    lines = [
        f"### {p} lost by {len(j.losers(p))} of the {len(j.outcomes)} pairs v1-stable allows",
        "",
        *quote(p),
        "",
        f"Lost by {member_words(where, 'v1-stable')} ({len(trace)} steps"
        + (f"; {others} other way{'s' * (others > 1)} in `check`)." if others else ")."),
        "",
        *paste_body(
            trace,
            tables,
            p,
            where=where,
            wire=revision_wire("v1-stable"),
            keep=REVISIONS["v1-stable"].states,
        ),
    ]
    if fix is None:
        lines += [f"No shipped amendment closes it{': ' + _P9_GAP if p == 'P9' else '.'}", ""]
    else:  # its sentence: under the report's table of amendments, or `check --amend NAME`
        assert fixed is not None
        lines += [
            f"Closed by the amendment `{fix.name}` (pairs that lose {p}: {len(j.losers(p))}→"
            f"{len(fixed.losers(p))}; its sentence: `acp-sysprompt check --amend {fix.name}`).",
            "",
        ]
    argv = [
        "acp-sysprompt", "counterexample", "--revision", "v1-stable",
        *(["--bound", bound] if bound != "default" else []),
        "--id", p, "--member", describe(o.member), "--out", p,
    ]  # fmt: skip
    lines += ["```sh", " ".join(shlex.quote(a) for a in argv), "```"]
    return "\n".join(lines)


def _choices(pattern: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"`{k} = {v}`" for k, v in pattern)


def build_report(
    out: Path,
    bound: str = "default",
    subjects: tuple[Subject, ...] = SUBJECTS,
    mutants: tuple[str, ...] | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
    stable_sections: bool = True,
) -> Path:
    """Write ``out/report.md`` (and the counterexample directories); return its path.

    ``jobs`` processes run the kill matrix and explore each subject's scopes (the rest runs
    here); the report is the same.
    """
    say = progress or (lambda _: None)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = []
    for s in subjects:
        say(f"exploring {s.label}")
        rows.append(verdict_row(s, bound, jobs))
    lines = [
        "# acp-sysprompt report",
        "",
        f"Every subject explored exhaustively within the `{bound}` bound "
        "(see docs/bounds.md); ✓ = holds in every reachable world, ✗ = violated (the number "
        "is the length of the shortest counterexample, linked). Rules broken = the subject's "
        "revision's own rules (R, S ids it states) that some world violates.",
        "",
        "| subject | " + " | ".join(P_IDS) + " | rules broken | states |",
        "|---|" + "---|" * len(P_IDS) + "---|---:|",
    ]
    for row in rows:
        cells = []
        for p in P_IDS:
            if row.verdicts[p] == "violated":
                d = _write_counterexample(row, p, out)
                n = row.exploration.length(p)
                cells.append(f"[✗ {n}]({d.relative_to(out).as_posix()}/review.md)")
            else:
                cells.append("✓")
        broken = []
        for r in row.rules_broken:
            d = _write_counterexample(row, r, out)
            should = " (SHOULD)" if REQUIREMENTS[r].is_advisory else ""
            broken.append(f"[{r}]({d.relative_to(out).as_posix()}/review.md){should}")
        lines.append(
            f"| {row.subject.label} | "
            + " | ".join(cells)
            + f" | {', '.join(broken) or 'none'} | {row.exploration.states:,} |"
        )
    lines += ["", "Subjects:", ""]
    for row in rows:
        s = row.subject
        who = f"profile `{s.profile}` over `{s.revision}`" if s.profile else f"`{s.revision}`"
        caps = ""
        if s.caps is not None:
            caps = f"; agents advertise systemPrompt {'/'.join(c.value for c in s.caps)} only"
        lines.append(f"- **{s.label}** — {who}; restarts: {s.restarts}{caps}. {s.note}")
    lines += ["", "P ids (docs/REQUIREMENTS.md):", ""]
    lines += [f"- **{p}** {REQUIREMENTS[p].text}" for p in P_IDS]
    if stable_sections:
        lines += _stable_sections(rows, out, bound, jobs, say)
    names = mutants if mutants is not None else tuple(MUTANTS)
    if names:
        lines += [
            "",
            "## Kill matrix",
            "",
            "Each mutant is one edit of its revision's tables (rfd-final, or v1-stable for the "
            "`v1_` ones) declaring the id it must violate. "
            "BFS: the shortest counterexample's length and the smallest bound that shows it; "
            "Hypothesis: the shrunk counterexample's length (300 examples × 50 steps, seed 0); "
            "– = not killed.",
            "",
            "| mutant | declares | BFS | bound | Hypothesis | killed |",
            "|---|---|---:|---|---:|---|",
        ]
        for k in kill_rows(names, jobs):
            say(f"mutant {k.mutant} ({k.seconds:.0f} s)")
            killed = "yes" if k.bfs or k.hypothesis else "**NO**"
            lines.append(
                f"| {k.mutant} | {k.declares} | {k.bfs or '–'} | {k.bfs_bound or '–'} | "
                f"{k.hypothesis or '–'} | {killed} |"
            )
    lines += _questions()
    lines += ["", f"Generated in {time.perf_counter() - t0:.0f} s by `acp-sysprompt report`."]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
