"""Pinned expectations of real agents: what ``conform`` is expected to find, per recipe and
version, and what a run found that differs from it.

Scope
    A pins file (``real-agents/expectations.toml``) holds, per recipe name and agent version,
    the ids expected to FAIL in every run (``fail``) and those expected to FAIL in some runs
    only (``unstable``), with an optional ``why``::

        ["zed-claude-agent-acp"."0.23.1"]
        fail = []
        unstable = ["S8"]
        why = "a load of a live session answered before its history: 3 of 5 runs"

    ``load_expectations`` reads it (a bad field: ``ExpectationsError``, one line naming the
    field); ``seen_in`` takes what a run found from its ``Report``; ``differences`` says, one
    line each, where the two part: a new failure, a failure pinned and not seen, an id newly
    unstable, an agent or version the file does not pin, and — whatever the pins say — a run
    that did not see the agent whole (it failed at start-up, or the run was cut short by an
    interrupt, ``--budget`` or a fault of this tool, leaving MANDATORY ids NOT_TESTED because
    no test that reaches them ran); ``unseen`` names each pinned-unstable
    id that failed in no run, a note and no difference. ``conform --recipe NAME --expect FILE``
    and ``tools/real_agents.py --expect FILE`` (``make real-agents``) use them: exit 0 when
    nothing differs, 1 with the lines otherwise; the notes are printed either way.

Abstractions
    An id pinned ``unstable`` matches a run where it failed in some runs, in all of them (a
    few runs of an intermittent fault may all fail) or in none (a race seen in one test of a
    hundred does not show in every few runs: zed-codex-acp's UPDATE-ID showed in two runs of
    six) — the last said as a note, so a fix is seen, but no difference, so a rare race does
    not fail every other ``make real-agents``.
    An id pinned ``fail`` matches where it failed in every run that judged it. Any other FAIL
    differs. An id is named as ``conform`` reports it: a registry id, a pseudo-id (``SCHEMA``,
    ``LIVENESS``, …) or ``ROW-<table>.<index>`` of a row some revision's tables hold; a name
    that is none of those is refused with the ids it might mean, so a typo cannot pin
    nothing.
    A pin says what a whole run finds: a run that saw less (``Seen.gaps``) differs from every
    pin, ``fail = []`` too — else an agent that no longer starts would match it.

Source
    Ours.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.files import InputError, parse_toml, read_text, shown, shown_json
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from simulations.live.conform.report import Report
from simulations.live.conform.verdict import BUDGET_CUT, cut_short, tests_counts, untested
from simulations.live.oracle.results import (
    ADVERTISED_ID,
    AGREE_ID,
    FAIL,
    LIVENESS_ID,
    NULL_LOAD_ID,
    PARSE_ID,
    REUSE_ID,
    SCHEMA_ID,
    SKIP_TABLES,
    UPDATE_ID,
    VERSION_ID,
    clip,
)

PSEUDO_IDS = (
    SCHEMA_ID,
    LIVENESS_ID,
    UPDATE_ID,
    ADVERTISED_ID,
    VERSION_ID,
    NULL_LOAD_ID,
    PARSE_ID,
    AGREE_ID,
    REUSE_ID,
)
_ROW = re.compile(r"ROW-[a-z_]+\.[0-9]+")
_KEYS = ("fail", "unstable", "why")


class ExpectationsError(ValueError):
    """A pins file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Pins:
    """One agent version's pins: ids failing in every run, ids failing in some."""

    fail: frozenset[str] = frozenset()
    unstable: frozenset[str] = frozenset()
    why: str = ""


@dataclass(frozen=True)
class Expectations:
    """A pins file: recipe name → version → ``Pins``; ``where`` names the file in messages."""

    where: str
    agents: Mapping[str, Mapping[str, Pins]]


@dataclass(frozen=True)
class Seen:
    """What a run found: each id's status over all its runs, and for each id that failed the
    runs it failed in and the runs that judged it; how many times the plan ran."""

    statuses: Mapping[str, str]
    failed: Mapping[str, tuple[int, int]]
    runs: int = 1
    # what the run did not see, one line each (a failed start-up, a cut that left MANDATORY
    # ids NOT_TESTED): each a difference from any pin
    gaps: tuple[str, ...] = ()

    @property
    def unstable(self) -> dict[str, tuple[int, int]]:
        """The ids that failed in some runs and not in the others."""
        return {rid: (k, n) for rid, (k, n) in self.failed.items() if k < n}


@functools.cache
def _row_ids() -> frozenset[str]:
    """Every ``ROW-<table>.<index>`` a run of some revision can report."""
    return frozenset(
        f"ROW-{name}.{i}"
        for revision in REVISIONS.values()
        for name in revision.tables.NAMES
        if name not in SKIP_TABLES
        for i in range(len(revision.tables.table(name)))
    )


def known_id(rid: str) -> bool:
    """``rid`` is a name ``conform`` can report (a ``ROW-`` id: of a row that exists)."""
    if rid in REQUIREMENTS or rid in PSEUDO_IDS:
        return True
    return _ROW.fullmatch(rid) is not None and rid in _row_ids()


def might_mean(rid: str) -> list[str]:
    """The ids ``conform`` reports that ``rid`` is closest to (a few; none where none is
    close); a ``ROW-`` name is matched more loosely, against the rows alone (a misspelt
    table: the same index in the tables that have it)."""
    if rid.upper().startswith("ROW"):
        return difflib.get_close_matches(rid, sorted(_row_ids()), n=3, cutoff=0.5)
    return difflib.get_close_matches(rid, [*REQUIREMENTS, *PSEUDO_IDS], n=3, cutoff=0.6)


def load_expectations(path: Path | str, argument: str = "--expect") -> Expectations:
    """The pins file at ``path``; ``ExpectationsError`` (``argument: file: field: why``, one
    line) where it cannot be read or a field is wrong."""
    where = str(path)
    where = where if where.isprintable() and len(where) <= 200 else shown(where, 200)

    def bad(field: str, why: str) -> ExpectationsError:
        return ExpectationsError(f"argument {argument}: {where}: {field}: {why}")

    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):  # a FIFO would block, /dev/zero never end
            raise ExpectationsError(f"argument {argument}: {where}: not a regular file")
        data = parse_toml(read_text(Path(path), where), where)
    except OSError as e:
        raise ExpectationsError(
            f"argument {argument}: {where}: {e.strerror or type(e).__name__}"
        ) from None
    except InputError as e:
        raise ExpectationsError(f"argument {argument}: {e}") from None
    agents: dict[str, dict[str, Pins]] = {}
    for name, versions in data.items():
        at = _key(name)
        if not isinstance(versions, dict):
            raise bad(at, 'a table of versions is needed (["NAME"."VERSION"])')
        agents[name] = {}
        for version, pins in versions.items():
            field = f"{at}.{_key(version)}"
            if not isinstance(pins, dict):
                raise bad(field, "a table with fail, unstable (lists of ids) and why is needed")
            agents[name][version] = _pins(pins, field, bad)
    return Expectations(where, agents)


def _key(key: str) -> str:
    """A TOML key as an error names it: bare where it can be, else quoted as TOML quotes it
    (clipped)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]{1,60}", key) else shown_json(key)


def _pins(table: dict[str, Any], field: str, bad: Any) -> Pins:
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise bad(f"{field}.{_key(unknown[0])}", f"unknown key (known: {', '.join(_KEYS)})")
    why = table.get("why", "")
    if not isinstance(why, str):
        raise bad(f"{field}.why", "a string is needed")
    lists: dict[str, frozenset[str]] = {}
    for key in ("fail", "unstable"):
        ids = table.get(key, [])
        if not isinstance(ids, list):
            raise bad(f"{field}.{key}", "a list of ids is needed")
        for i, rid in enumerate(ids):
            if not isinstance(rid, str):
                raise bad(f"{field}.{key}[{i}]", f"an id (a string) is needed, got {shown(rid)}")
            if not known_id(rid):
                close = might_mean(rid)
                meant = f"; did you mean {', '.join(close)}?" if close else ""
                raise bad(
                    f"{field}.{key}[{i}]",
                    f"{shown(rid)} is no id conform reports (a requirement id, ROW-<table>.<n> "
                    f"of a row the model has, or one of {', '.join(PSEUDO_IDS)}){meant}",
                )
            if rid in ids[:i]:
                raise bad(f"{field}.{key}[{i}]", f"{rid} is named twice")
        lists[key] = frozenset(ids)
    both = sorted(lists["fail"] & lists["unstable"])
    if both:
        raise bad(f"{field}.unstable", f"{both[0]} is pinned to fail too: pin it in one list")
    return Pins(lists["fail"], lists["unstable"], why)


def seen_in(report: Report) -> Seen:
    """What ``report``'s run found, as the pins compare it."""
    reqs = report.requirements()
    failed = {}
    for rid, r in reqs.items():
        if r["status"] != FAIL:
            continue
        judged = [s for s in r.get("runs", [FAIL]) if s is not None]
        k, n = judged.count(FAIL), len(judged)
        failed[rid] = (k, n) if k else (max(n, 1), max(n, 1))  # a walk's FAIL alone: stable
    statuses = {rid: r["status"] for rid, r in reqs.items()}
    return Seen(statuses, failed, report.repeat, _gaps(report, reqs))


def _gaps(report: Report, reqs: dict[str, Any]) -> tuple[str, ...]:
    """What ``report``'s run did not see, one line each (``Seen.gaps``)."""
    if report.startup_failure is not None:
        return (f"the agent failed at start-up: {clip(report.startup_failure, 160)}",)
    out = []
    cut = cut_short(report)
    if cut is not None:
        ran, planned = tests_counts(report)
        how = "--budget" if cut == BUDGET_CUT else cut
        out.append(f"the run was cut short ({how}) after {ran} of {planned} tests")
    left = untested(report, reqs)
    if left:
        out.append(
            f"{len(left)} MANDATORY id(s) NOT_TESTED, no test that reaches them ran: "
            + clip(", ".join(left), 160)
        )
    return tuple(out)


def _found(seen: Seen) -> str:
    """What a run found, in a few words (for an agent or version the file does not pin)."""
    stable = [rid for rid in seen.failed if rid not in seen.unstable]
    said = f"fail = {stable}"
    if seen.unstable:
        said += f", unstable = {sorted(seen.unstable)}"
    return said.replace("'", '"')


def differences(expected: Expectations, name: str, version: str, seen: Seen) -> list[str]:
    """Each way ``seen`` (agent ``name`` at ``version``) differs from its pins, one line each,
    starting ``name version:``; [] where it matches them."""
    head = f"{name} {version}:"
    out = [f"{head} {gap}" for gap in seen.gaps]  # a run that saw less differs from any pin
    versions = expected.agents.get(name)
    if versions is None:
        return [*out, f"{head} not pinned in {expected.where} (seen: {_found(seen)})"]
    pins = versions.get(version)
    if pins is None:
        known = ", ".join(sorted(versions)) or "none"
        return [
            *out,
            f"{head} no pins for this version in {expected.where} (pinned versions: {known}; "
            f"seen: {_found(seen)})",
        ]
    runs = seen.runs
    for rid, (failed, judged) in seen.failed.items():
        every = failed == judged
        if rid in pins.unstable or (rid in pins.fail and every):
            continue
        if rid in pins.fail:
            out.append(
                f"{head} {rid}: newly unstable: pinned to fail in every run, FAIL in {failed} "
                f"of {judged} runs"
            )
        elif every:
            out.append(f"{head} {rid}: new failure (FAIL in {failed} of {judged} runs)")
        else:
            out.append(f"{head} {rid}: new failure, unstable (FAIL in {failed} of {judged} runs)")
    for rid, now in _not_failed(seen, pins.fail):
        out.append(f"{head} {rid}: pinned to fail, now {now} (in {runs} run(s))")
    return out


def _not_failed(seen: Seen, ids: frozenset[str]) -> list[tuple[str, str]]:
    """Of ``ids`` (sorted), those that failed in no run of ``seen``, each with its status now
    ("not judged" where no test judged it)."""
    out = []
    for rid in sorted(ids):
        status = seen.statuses.get(rid)
        if status != FAIL:
            out.append((rid, "not judged" if status is None else status))
    return out


def unseen(expected: Expectations, name: str, version: str, seen: Seen) -> list[str]:
    """The ids pinned unstable for ``name`` at ``version`` that failed in none of ``seen``'s
    runs, one note each (no difference: see the module's Abstractions)."""
    pins = expected.agents.get(name, {}).get(version)
    if pins is None:
        return []
    return [
        f"{name} {version}: {rid}: pinned unstable, failed in none of {seen.runs} run(s) (now "
        f"{now}): fixed, or it did not show this time; unpin it once it stays away"
        for rid, now in _not_failed(seen, pins.unstable)
    ]
