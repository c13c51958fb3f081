"""A counterexample ready to paste: the rule in words, the member in words, the rules on its path.

Scope
    What review.md (``simulations.outputs.forms.review_markdown``) and the report's blocks
    "Findings to take upstream" (``simulations.outputs.report``) say in words, so that either
    can be pasted as it is into a GitHub pull-request review or issue: ``quote`` (the rule or
    property quoted with its keyword spelled out, its source and version), ``member_words``
    (a member of a population named only by the choices that matter to its path: a heading
    "lost where" of ``simulations.engines.population.Judged.losing``), ``path_rules`` (each
    rule a step of the path broke, said as what the party did: "the client skipped a SHOULD"),
    and ``v1_source`` (where the v1 rules are read from). Such a block has no tool-internal
    ``_meta`` and at most PASTE_LIMIT characters (``tests/test_paste.py`` checks both).

Abstractions
    A choice's value is said as what the agent or the client does, followed by what leaves
    it open ("(T16 is silent)", "(T15 is a MAY)"); the words are ours and live here, beside
    the names in ``model.population.CHOICES``, which stay the names a command line takes.

Source
    model/spec.py (keywords, paraphrases, sources); model/population.py (the choices);
    the v1 rules' source: the field docs of the @agentclientprotocol/sdk 2.4.0 schema, as
    model/spec.py's T family says (the stabilised text on load, resume and fork is not public).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from model.population import Member, choice_of
from model.situations import SITUATIONS
from model.spec import REQUIREMENTS, Family, Keyword, Requirement
from simulations.engines.trace import ReplayedStep

__all__ = [
    "CHOICE_WORDS",
    "PASTE_LIMIT",
    "V1_SOURCE",
    "choice_ids",
    "member_words",
    "party",
    "path_rules",
    "quote",
    "v1_source",
]

PASTE_LIMIT = 2000  # characters of one pasted block (review.md, a report's upstream block)

_SDK = "@agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json"
V1_SOURCE = (
    f"T ids paraphrase the field docs of `{_SDK}` (`#/$defs/…`): the stabilised text on load, "
    "resume and fork is not public."
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
    "once it no longer advertises systemPrompt",
    ("without_capability", "refuse"): "refuses to reopen a prompted session once it no longer "
    "advertises systemPrompt",
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
