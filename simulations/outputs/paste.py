"""A counterexample ready to paste: review.md, and the words it and the report's blocks share.

Scope
    ``review_markdown`` writes review.md, a block to paste as it is into a GitHub
    pull-request review: the heading (the id, the verdict, what was checked: ``subject_of``
    or a ``Subject``), the rule quoted, the verdict, then ``paste_body`` (each rule the path
    broke in words, where the v1 rules are read from, the steps as an inline Mermaid diagram
    of ``simulations.outputs.sequence``), and last the command that reproduces it
    (``Subject.command``, else ``replay_command``). The report's blocks "Findings to take
    upstream" (``simulations.outputs.report``) share ``paste_body`` and the words: ``quote``
    (the rule or property quoted with its keyword spelled out, its source and version),
    ``member_words`` (a member of a population named only by the choices that matter to its
    path: a heading "lost where" of ``simulations.engines.population.Judged.losing``),
    ``path_rules`` (each rule a step of the path broke, said as what the party did: "the
    client skipped a SHOULD"), and ``v1_source`` (where the v1 rules are read from). Such a
    block has no tool-internal ``_meta`` and at most PASTE_LIMIT characters
    (``tests/test_paste.py`` checks both). ``epilogue_note`` says where a counterexample ends
    when its trace goes on with the observing epilogue (review.md and steps.md);
    ``keep_for``: the ids a revision states. ``simulations.outputs.forms.write_counterexample``
    writes review.md beside the other four forms.

Abstractions
    A choice's value is said as what the agent or the client does, followed by what leaves
    it open ("(T16 is silent)", "(T15 is a MAY)"); the words are ours and live here, beside
    the names in ``model.population.CHOICES``, which stay the names a command line takes.
    A ``Subject`` is what a counterexample was found in, past its revision, mutant and
    shipped profile: review.md's heading names it and the ITF ``#meta`` keeps what
    ``replay`` needs (``simulations.outputs.forms.itf``).

Source
    model/spec.py (keywords, paraphrases, sources); model/population.py (the choices);
    the v1 rules' source: the field docs of the @agentclientprotocol/sdk 2.4.0 schema, as
    model/spec.py's T family says (the stabilised text on load, resume and fork is not public).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.mutants import MUTANTS
from model.population import Member, choice_of
from model.profiles import PROFILES
from model.revisions import REVISIONS
from model.situations import SITUATIONS
from model.spec import REQUIREMENTS, Family, Keyword, Requirement
from model.tables import Tables
from simulations.engines.trace import ReplayedStep, Trace, replay
from simulations.outputs.sequence import first_violation, mermaid
from simulations.wire.acp import meta_methods, wire_for

__all__ = [
    "CHOICE_WORDS",
    "PASTE_LIMIT",
    "V1_SOURCE",
    "Subject",
    "choice_ids",
    "epilogue_note",
    "keep_for",
    "member_words",
    "party",
    "paste_body",
    "path_rules",
    "quote",
    "replay_command",
    "review_markdown",
    "subject_of",
    "v1_source",
]

PASTE_LIMIT = 2000  # characters of one pasted block (review.md, a report's upstream block)

_SDK = "@agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json"
V1_SOURCE = (
    f"T ids paraphrase the field docs of `{_SDK}`: the stabilised text on load/resume/fork "
    "is not public."
)

# (choice, value) → what the agent or client that takes it does; the words name no id
CHOICE_WORDS: dict[tuple[str, str], str] = {
    ("on_omit", "stored"): "keeps the stored prompt on a load/resume/fork that carries none",
    (
        "on_omit",
        "default",
    ): "falls back to its default prompt on a load/resume/fork that carries none",
    ("on_differ", "apply"): "applies a differing re-sent prompt",
    ("on_differ", "keep"): "keeps the stored prompt over a differing re-sent one",
    ("on_differ", "reject"): "refuses a load/resume/fork that re-sends a differing prompt",
    ("on_empty", "reject"): "refuses an empty content array",
    ("on_empty", "accept"): "accepts an empty content array",
    ("without_capability", "default"): "reopens a prompted session under its default prompt "
    "once it stops advertising systemPrompt",
    ("without_capability", "refuse"): "refuses to reopen a prompted session once it stops "
    "advertising systemPrompt",
    ("active_reopen", "serve"): "serves a load or resume of a session already active on that "
    "connection",
    ("active_reopen", "refuse"): "refuses a load or resume of a session already active on that "
    "connection",
    ("client_resends", "any"): "re-sends any prompt on load/resume/fork",
    ("client_resends", "same"): "re-sends the prompt it created the session with",
    ("client_resends", "none"): "re-sends no prompt on load/resume/fork",
}

_PARTY = {"agent": "the agent", "client": "the client", "end-to-end": "end to end"}


def party(req: Requirement) -> str:
    """Whom ``req`` binds, in words: the agent, the client, the advertising agent, the protocol."""
    if req.binds.startswith("Agent"):  # "Agent★": an agent that advertised the capability
        return "the advertising agent"
    return _PARTY.get(req.binds, "the protocol")


def _keyword(req: Requirement) -> str:
    """``MUST``, ``SHOULD``, ``MAY`` … as the text says it; ``MAY (either)`` is a MAY."""
    return "MAY" if req.keyword is Keyword.MAY_EITHER else req.keyword.value


def quote(rid: str) -> list[str]:
    """The id quoted as a Markdown blockquote: a property as the property it is (this model's
    yardstick), a rule with whom it binds and its keyword in words; then its source, whose
    version the source names (a commit, a package version)."""
    req = REQUIREMENTS[rid]
    if req.family is Family.P:
        head = f"**{rid}**, an end-to-end property (ours, not the spec's)"
    elif req.keyword is Keyword.SILENT:
        head = f"**{rid}**, where the text is silent"
    else:
        head = f"**{rid}**: {party(req)} {_keyword(req)}"
    return [f"> {head}: {req.text}", f"> — `{req.source}`"]


def _left_open(choice: str) -> str:
    """What leaves ``choice`` open: ``T16 is silent``, ``T15 is a MAY``, ``the text is silent``."""
    rid = choice_of(choice).rid
    if rid is None:
        return "the text is silent"
    req = REQUIREMENTS[rid]
    return f"{rid} is silent" if req.keyword is Keyword.SILENT else f"{rid} is a {_keyword(req)}"


def choice_ids(where: Member) -> list[str]:
    """The ids that leave the choices of ``where`` open (T15, T16, T6 …; none for a silence)."""
    return [rid for name, _ in where if (rid := choice_of(name).rid) is not None]


def member_words(where: Member, revision: str) -> str:
    """The pairs a heading "lost where" names, in words: ``an agent that applies a differing
    re-sent prompt (T16 is silent), with a client that re-sends any valid prompt on load,
    resume and fork (T6 is a SHOULD)``; ``every pair <revision> allows`` for ``()``."""
    if not where:
        return f"every pair {revision} allows"
    said = {"agent": [], "client": []}  # type: dict[str, list[str]]
    for name, value in where:
        c = choice_of(name)
        at = "" if c.situation is None else f" at {SITUATIONS[c.situation].what}"
        said[c.who].append(f"{CHOICE_WORDS[c.base, value]}{at} ({_left_open(name)})")
    agent = "an agent that " + " and ".join(said["agent"]) if said["agent"] else "any agent"
    client = "a client that " + " and ".join(said["client"]) if said["client"] else "any client"
    return f"{agent}, with {client}"


_VERB = {Keyword.SHOULD: "skipped a SHOULD"}


def path_rules(steps: Sequence[ReplayedStep], rid: str) -> list[tuple[str, str]]:
    """Each rule (not a P id, not ``rid``) a step of the path broke, once, with a list item
    saying it in words: ``- At step 4 the client skipped a SHOULD (T6): <text> — `<source>` ``
    (a T id's source without the schema's name, which ``V1_SOURCE`` says once)."""
    seen: set[str] = set()
    out = []
    for i, r in enumerate(steps, 1):
        for v in r.violated:
            req = REQUIREMENTS.get(v)
            if v == rid or v in seen or req is None or req.family is Family.P:
                continue
            seen.add(v)
            verb = _VERB.get(req.keyword, f"broke a {req.keyword.value}")
            source = req.source.removeprefix(_SDK)  # V1_SOURCE names the schema once
            out.append((v, f"- At step {i} {party(req)} {verb} ({v}): {req.text} — `{source}`"))
    return out


def v1_source(ids: Iterable[str]) -> str | None:
    """The line on where the v1 rules are read from, where ``ids`` quote or name a T id."""
    return V1_SOURCE if any(REQUIREMENTS[i].family is Family.T for i in ids) else None


# ---- the review block and the replay command -------------------------------------------------


def epilogue_note(counterexample: int, length: int) -> str:
    """Where a counterexample of ``counterexample`` steps ends in a trace of ``length`` steps
    that goes on with its observing epilogue (a row of steps.md, a sentence of review.md)."""
    one = length == counterexample + 1
    shown = f"Step {length} only shows" if one else f"Steps {counterexample + 1}–{length} only show"
    return (
        f"*The counterexample ends at step {counterexample}. {shown} it on the wire: the "
        "shortest continuation after which the faulty agent answers otherwise than the "
        "reference agent (the observing epilogue).*"
    )


def replay_command(
    path: Path | str,
    revision: str | None = None,
    mutant: str | None = None,
    profile: str | None = None,
) -> str:
    """The shell command that re-runs an ITF counterexample file."""
    parts = ["acp-sysprompt", "replay", shlex.quote(str(path))]
    if revision is not None:
        parts += ["--revision", shlex.quote(revision)]
    if mutant is not None:
        parts += ["--mutant", shlex.quote(mutant)]
    if profile is not None:
        parts += ["--profile", shlex.quote(profile)]
    return " ".join(parts)


def keep_for(revision: str | None, subject: Subject | None = None) -> Callable[[str], bool] | None:
    """Only the ids ``revision`` states (all ids for an unknown revision), less those
    ``subject`` retires."""
    if revision not in REVISIONS:
        return None
    states = REVISIONS[revision].states
    retired = () if subject is None else subject.retired
    return states if not retired else (lambda rid: states(rid) and rid not in retired)


@dataclass(frozen=True)
class Subject:
    """What a counterexample was found in, past its revision, mutant and shipped profile.

    ``title`` replaces the subject of review.md's heading (``### R16 violated — <title>``);
    ``meta``: members added to the ITF ``#meta`` (``member``: the population member whose
    tables ``replay`` rebuilds; ``amendment``; ``client_profile``: the client ``replay``
    pairs with the agent); ``note``: a paragraph under the verdict (what ``replay`` needs);
    ``methods``: where the prompt travels in ``_meta`` (``meta_methods`` of a profile that is
    not shipped); ``where``: the choices that matter to the path (a heading "lost where" of a
    population: review.md says where T ids leave them open and reads the v1 rules' source);
    ``command``: the command that reproduces it from a fresh clone, in place of the replay of
    the ITF file."""

    title: str
    meta: tuple[tuple[str, Any], ...] = ()
    note: str = ""
    methods: tuple[str, ...] | None = None
    where: tuple[tuple[str, str], ...] | None = None
    command: str = ""
    # rules of the revision the subject does not state (a proposal's status retires the
    # duty to refuse with an error: ``model.amend.Amendment.retires``): never marked
    retired: tuple[str, ...] = ()


def subject_of(revision: str, mutant: str | None = None, profile: str | None = None) -> str:
    """``mutant `m` of revision `r` (title): summary``, as review.md's heading names it."""
    subject = f"revision `{revision}`"
    if revision in REVISIONS:
        subject += f" ({REVISIONS[revision].title})"
    if mutant is not None:
        m = MUTANTS.get(mutant)
        summary = f": {m.summary} (declares {m.violates})" if m is not None else ""
        subject = f"mutant `{mutant}` of {subject}{summary}"
    if profile is not None:
        subject = f"profile `{profile}` over {subject}"
    return subject


def paste_body(
    trace: Trace,
    tables: Tables,
    rid: str,
    *,
    where: Member = (),
    wire: str = "blocks",
    keep: Callable[[str], bool] | None = None,
    counterexample: int | None = None,
    meta: Collection[str] = (),
) -> list[str]:
    """The middle of a pasted block (review.md, a report's upstream block), each part followed
    by a blank line: each rule the path broke in words, where the v1 rules are read from
    where a T id is named (``rid``, a rule on the path, a choice of ``where``), and the steps
    with their replies as an inline Mermaid block."""
    rules = path_rules(replay(trace, tables, keep), rid)
    source = v1_source([rid, *(r for r, _ in rules), *choice_ids(where)])
    sequence = mermaid(
        trace, tables, rid, wire=wire, keep=keep, counterexample=counterexample, meta=meta
    )
    return [
        *([*(line for _, line in rules), ""] if rules else []),
        *([source, ""] if source else []),
        "```mermaid",
        sequence.rstrip("\n"),
        "```",
        "",
    ]


def review_markdown(
    trace: Trace,
    tables: Tables,
    rid: str,
    revision: str,
    mutant: str | None,
    *,
    path: Path | str = "trace.itf.json",
    found_by: str = "exhaustive BFS",
    shortest: bool = True,
    wire: str | None = None,
    profile: str | None = None,
    counterexample: int | None = None,
    subject: Subject | None = None,
) -> str:
    """review.md: a Markdown block to paste into a PR review as it is: the requirement quoted
    with its keyword in words and its source, the verdict, each rule the path broke in words,
    where the v1 rules are read from (where a T id is named), the steps with their replies as
    an inline Mermaid diagram, and last the command that reproduces it (``Subject.command``,
    else the replay of ``path``).

    The steps show the prompt as ``wire`` carries it (default: ``revision``'s wire).
    ``counterexample``: how many steps are the counterexample, where the trace goes on with
    the steps that only show it on the wire (``simulations.outputs.forms.shown_on_the_wire``).
    ``subject``: what was checked, where the revision, mutant and profile do not say it all.
    """
    wire = wire_for(revision, wire)
    keep = keep_for(revision, subject)
    steps = replay(trace, tables, keep)
    first = first_violation(steps, rid)
    title = subject.title if subject is not None else subject_of(revision, mutant, profile)
    if subject is not None and subject.methods is not None:
        methods: Collection[str] = subject.methods
    else:
        methods = meta_methods(PROFILES[profile]) if profile in PROFILES else ()
    status = "not reproduced" if first is None else "violated"
    if first is None:
        verdict = (
            f"**not reproduced**: replaying these {len(steps)} steps violates no check of {rid}."
        )
    else:
        bound = ", the shortest within the bound" if shortest else ""
        verdict = f"Found by {found_by}: {first} steps{bound}."
        if counterexample is not None and counterexample < len(steps):
            verdict += " " + epilogue_note(counterexample, len(steps)).strip("*")
        elif first < len(steps):
            verdict += f" (The trace goes on to step {len(steps)}.)"
    where = subject.where if subject is not None and subject.where is not None else ()
    command = subject.command if subject is not None and subject.command else None
    lines = [
        f"### {rid} {status} — {title}",
        "",
        *quote(rid),
        "",
        verdict,
        "",
        *([subject.note, ""] if subject is not None and subject.note else []),
        *paste_body(
            trace,
            tables,
            rid,
            where=where,
            wire=wire,
            keep=keep,
            counterexample=counterexample,
            meta=methods,
        ),
        "Reproduce:" if command else "Replay:",
        "",
        "```sh",
        command or replay_command(path, revision, mutant, profile),
        "```",
    ]
    return "\n".join(lines) + "\n"
