"""alt-instructions: the alternative "Session-Scoped Instructions" RFD judged by A1–A18.

Its wire, its replace-only agent, its pinned default-bound verdicts, and a counterexample
transcript that validates against our own sessionInstructions schema.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from model.invariants import CHECKS, NOT_CHECKED
from model.machines import System
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from model.types import (
    BASE,
    BIG,
    INVALID_PARAMS,
    Block,
    BlockKind,
    Caps,
    ClientKind,
    PromptCap,
    Reason,
    Request,
    World,
    initial_world,
)
from simulations.api import check
from simulations.cli import main
from simulations.engines.domain import ALT_DOMAIN, DEFAULT_DOMAIN, text
from simulations.engines.trace import Trace
from simulations.wire.acp import transcript
from simulations.wire.schema import validate_transcript

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")

ALT = REVISIONS["alt-instructions"]
REPLACE_ONLY = Caps(PromptCap.REPLACE, load_session=True, fork=True)


def _ready(profile: Caps, client: ClientKind = ClientKind.CONFORMING) -> World:
    w = initial_world(profile)
    for req in (Request("connect", client=client), Request("initialize")):
        w = System(ALT.tables).step(w, req).after
    return w


def test_the_wire_carries_one_text_and_a_mode_on_session_new_only() -> None:
    admits = ALT.admits
    assert admits(Request("session_new", system_prompt=text("a"), mode="append"))
    assert admits(Request("session_new", system_prompt=text(""), mode="override"))
    assert admits(Request("session_new"))
    assert not admits(Request("session_new", system_prompt=text("a")))  # the mode is the tag
    assert not admits(Request("session_new", mode="append"))
    assert not admits(Request("session_new", system_prompt=text("a", "b"), mode="append"))
    assert not admits(Request("session_new", system_prompt=(), mode="append"))
    assert not admits(
        Request("session_new", system_prompt=(Block(BlockKind.IMAGE),), mode="append")
    )
    assert not admits(Request("session_load", sid="s1", system_prompt=text("a"), mode="append"))
    d = DEFAULT_DOMAIN.restrict(admits)
    assert d.prompts == (None, text("a"), text(""), text(BIG))
    assert not d.attach_prompts
    # the replace-only agent joins domains that compare capabilities, after each override one
    caps = [p.system_prompt for p in ALT_DOMAIN.restrict(admits).profiles]
    assert caps.count(PromptCap.REPLACE) == caps.count(PromptCap.OVERRIDE) == 2


def test_a_replace_only_agent() -> None:
    """A5: a conforming client holds append back; A6: the agent refuses it; A10: replace."""
    w = _ready(REPLACE_ONLY)
    append = Request("session_new", system_prompt=text("a"), mode="append")
    assert not System(ALT.tables).step(w, append).sent
    w = _ready(REPLACE_ONLY, ClientKind.ADVERSARIAL)
    step = System(ALT.tables).step(w, append)
    assert step.reply.code == INVALID_PARAMS and step.after.agent.store == ()
    step = System(ALT.tables).step(w, replace(append, mode="override"))
    assert step.reply.ok and step.after.agent.store[0].live == ("a",)


def test_an_empty_text_is_invalid_params() -> None:
    """A7 (and A2: a conforming client does not send it)."""
    empty = Request("session_new", system_prompt=text(""), mode="append")
    assert not System(ALT.tables).step(_ready(Caps(PromptCap.OVERRIDE)), empty).sent
    w = _ready(Caps(PromptCap.OVERRIDE), ClientKind.ADVERSARIAL)
    step = System(ALT.tables).step(w, empty)
    assert (step.reply.code, step.reply.reason) == (INVALID_PARAMS, Reason.EMPTY_TEXT)
    # the final RFD's agent takes it (Q7): what A7 changes
    step = System(REVISIONS["rfd-final"].tables).step(w, empty)
    assert step.reply.ok and step.after.agent.store[0].live == (BASE, "")


def test_every_a_id_is_checked_or_explained() -> None:
    a_ids = {rid for rid in REQUIREMENTS if rid.startswith("A")}
    assert a_ids <= ALT.rules
    checked = {rid for rid in a_ids if rid in CHECKS}
    assert checked == {"A2", "A5", "A6", "A7", "A8", "A9", "A10", "A12", "A13", "A18"}
    assert a_ids - checked <= set(NOT_CHECKED)


def test_default_bound_verdicts_are_pinned() -> None:
    r = check(revision="alt-instructions")
    assert (r.budget["states"], r.budget["edges"], r.budget["complete"]) == (6131, 14191, True)
    v = r.verdicts
    assert [p for p in v if p.startswith("P") and v[p] == "violated"] == [
        "P1",
        "P2",
        "P3",
        "P4",
        "P9",
    ]
    assert all(v[f"P{i}"] == "holds" for i in (5, 6, 7, 8))
    assert all(v[f"S{i}"] == "holds" for i in range(1, 9))
    assert all(v[a] == "holds" for a in ("A2", "A5", "A6", "A7", "A8", "A9", "A10", "A12"))
    assert v["A13"] == v["A18"] == "holds"
    assert all(v[a] == "n/a" for a in ("A1", "A3", "A4", "A11", "A14", "A15", "A16", "A17"))
    assert all(v[rid] == "n/a" for rid in v if rid[0] in "RT")  # not its rules
    # as under the final RFD: an agent restarting without the capability loses the prompt
    assert r.counterexamples["P1"].profile.system_prompt is PromptCap.OVERRIDE


def _messages(out: Path) -> list[dict[str, Any]]:
    lines = (out / "transcript.ndjson").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("rid", ["P9", "P1"])
def test_counterexample_transcript_validates(tmp_path: Path, rid: str) -> None:
    argv = ["counterexample", "--revision", "alt-instructions", "--bound", "small"]
    assert main([*argv, "--id", rid, "--out", str(tmp_path), "--quiet"]) == 0
    msgs = _messages(tmp_path)
    assert msgs and validate_transcript(msgs, wire="instructions") == []
    results = [m["result"] for m in msgs if isinstance(m.get("result"), dict)]
    caps = [
        r["agentCapabilities"]["sessionCapabilities"] for r in results if "agentCapabilities" in r
    ]
    assert caps and all("systemPrompt" not in c for c in caps)
    if rid == "P1":
        news = [m["params"] for m in msgs if m.get("method") == "session/new"]
        assert any(set(p.get("sessionInstructions", {})) == {"mode", "text"} for p in news)
        assert all("systemPrompt" not in p for p in news)


ADVERSARY = Trace(
    REPLACE_ONLY,
    (
        Request("connect", client=ClientKind.ADVERSARIAL),
        Request("initialize"),
        Request("session_new", system_prompt=text("a"), mode="override"),
        Request("session_new", system_prompt=text(""), mode="override"),
        Request("session_new", system_prompt=text("a"), mode="append"),
        Request("session_new", system_prompt=text("a"), mode="replace"),  # unknown
    ),
)


def test_the_instructions_wire_shows_alt_names_and_validates() -> None:
    msgs = transcript(ADVERSARY, ALT.tables, wire="instructions")
    assert validate_transcript(msgs, wire="instructions") == []
    caps = msgs[1]["result"]["agentCapabilities"]["sessionCapabilities"]
    assert caps["sessionInstructions"] == {"replace": {}}
    modes = [m["params"]["sessionInstructions"]["mode"] for m in msgs[2::2]]
    assert modes == ["replace", "replace", "append", "prepend"]
    codes = [m.get("error", {}).get("code") for m in msgs[3::2]]
    assert codes == [None, INVALID_PARAMS, INVALID_PARAMS, INVALID_PARAMS]


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda p: p.update(systemPrompt=[{"type": "text", "text": "a"}]), "no such field"),
        (lambda p: p["sessionInstructions"].pop("mode"), "'mode' is a required property"),
        (lambda p: p["sessionInstructions"].update(text=["a"]), "is not of type 'string'"),
        (lambda p: p["sessionInstructions"].update(content="a"), "Additional properties"),
    ],
)
def test_the_schema_has_teeth(edit: Any, where: str) -> None:
    msgs = transcript(ADVERSARY, ALT.tables, wire="instructions")
    edit(msgs[4]["params"])
    problems = validate_transcript(msgs, wire="instructions")
    assert len(problems) == 1 and where in problems[0], problems
    # the field is refused where the wire does not put it, and on the other wires
    load = {"jsonrpc": "2.0", "id": 99, "method": "session/load"}
    params = {"sessionId": "s1", "cwd": "/work", "mcpServers": []}
    bad = [{**load, "params": {**params, "sessionInstructions": {"mode": "append", "text": "a"}}}]
    bad.append({"jsonrpc": "2.0", "id": 99, "result": {}})
    assert validate_transcript(bad, wire="instructions")
    assert validate_transcript(msgs, wire="blocks")


def test_a_capability_leaf_the_rfd_does_not_define_is_refused() -> None:
    msgs = transcript(ADVERSARY, ALT.tables, wire="instructions")
    msgs[1]["result"]["agentCapabilities"]["sessionCapabilities"]["sessionInstructions"] = {
        "override": {}
    }
    problems = validate_transcript(msgs, wire="instructions")
    assert len(problems) == 1 and "Additional properties" in problems[0], problems
