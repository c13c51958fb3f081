"""Counterexample renderings: schema-valid transcripts, minimal step diffs, diagram, review, ITF."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from model.tables import ENVIRONMENT_EVENTS, REFERENCE, Tables
from model.types import Block, BlockKind, ClientKind, Request
from simulations.engines.domain import MODES, PROMPTS, text
from simulations.engines.scenarios import APPEND_AGENT, CONNECT, OVERRIDE_AGENT, SCENARIOS
from simulations.engines.trace import Trace, replay, request_text
from simulations.outputs.forms import (
    FILES,
    changes,
    itf,
    load_itf,
    steps_markdown,
    write_counterexample,
)
from simulations.outputs.paste import replay_command, review_markdown
from simulations.outputs.sequence import mermaid
from simulations.wire.acp import WIRES, revision_wire, transcript
from simulations.wire.schema import (
    SCHEMA_FILES,
    load_schema,
    method_schemas,
    schema_registry,
    validate_transcript,
    vendored_schemas,
)

# (trace, tables, id, mutant): each case's id is found violated by replay, not asserted here.
CASES: dict[str, tuple[Trace, Tables, str, str | None]] = {
    "reference P1 after a restart without the capability": (
        SCENARIOS["restart_without_capability_then_load"], REFERENCE, "P1", None),
    "mutant turns_use_default_prompt": (
        SCENARIOS["append_prompt_survives_close_and_load"],
        MUTANTS["turns_use_default_prompt"].tables, "P1", "turns_use_default_prompt"),
    "mutant created_despite_invalid_params": (
        SCENARIOS["invalid_requests_are_rejected"],
        MUTANTS["created_despite_invalid_params"].tables, "R15", "created_despite_invalid_params"),
    "mutant fork_drops_parent_prompt": (
        SCENARIOS["override_session_forked_and_resumed"],
        MUTANTS["fork_drops_parent_prompt"].tables, "R17", "fork_drops_parent_prompt"),
    "reference P9 across two connections": (
        SCENARIOS["session_loaded_from_another_connection"], REFERENCE, "P9", None),
}  # fmt: skip

P1_TRACE = CASES["reference P1 after a restart without the capability"][0]


def _violated(trace: Trace, tables: Tables) -> set[str]:
    return {rid for r in replay(trace, tables) for rid in r.violated}


def _sent_client_requests(trace: Trace, tables: Tables) -> list[Request]:
    return [
        r.step.request
        for r in replay(trace, tables)
        if r.step.sent and r.step.request.method not in ENVIRONMENT_EVENTS
    ]


@pytest.mark.parametrize("case", CASES)
def test_cases_do_violate_their_id(case: str) -> None:
    trace, tables, rid, _ = CASES[case]
    assert rid in _violated(trace, tables)


# ---- transcript ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_scenario_transcript_validates_against_the_official_schema(name: str) -> None:
    for tables in (REFERENCE, MUTANTS["created_despite_invalid_params"].tables):
        messages = transcript(SCENARIOS[name], tables)
        assert messages, name
        assert validate_transcript(messages) == []


@pytest.mark.parametrize("case", CASES)
def test_transcript_pairs_each_sent_request_with_one_answer(case: str) -> None:
    trace, tables, _, _ = CASES[case]
    messages = transcript(trace, tables)
    sent = _sent_client_requests(trace, tables)
    # the agent's notifications (a turn's chunk, a replay) come between a request and its answer
    notes = [i for i, m in enumerate(messages) if "id" not in m]
    assert all(messages[i]["method"] == "session/update" for i in notes)
    assert all("id" in messages[i - 1] or i - 1 in notes for i in notes)
    pairs = [m for m in messages if "id" in m]
    requests = [m for m in pairs if "method" in m]
    assert len(pairs) == 2 * len(sent) == 2 * len(requests)
    assert [m["method"] for m in requests] == [
        r.method.replace("session_", "session/") for r in sent
    ]
    for req, resp in zip(pairs[::2], pairs[1::2], strict=True):
        assert req["jsonrpc"] == resp["jsonrpc"] == "2.0"
        assert resp["id"] == req["id"]
        assert ("result" in resp) != ("error" in resp)
    assert len({m["id"] for m in requests}) == len(requests)
    assert [m["params"]["_meta"]["conn"] for m in requests] == [r.conn for r in sent]


def test_transcript_carries_the_rfd_fields_including_adversarial_values() -> None:
    trace, tables, _, _ = CASES["mutant created_despite_invalid_params"]
    news = [m["params"] for m in transcript(trace, tables) if m.get("method") == "session/new"]
    prompts = [p.get("systemPrompt") for p in news]
    assert [] in prompts  # the empty array an adversarial client sends
    assert [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}] in prompts
    assert {"override", "append"} <= {p.get("systemPromptMode") for p in news}
    assert all(p["cwd"] == "/work" and p["mcpServers"] == [] for p in news)
    errors = [m["error"] for m in transcript(trace, tables) if "error" in m]
    assert {e["code"] for e in errors} >= {-32602, -32600}


def test_initialize_result_advertises_the_connection_caps() -> None:
    override = SCENARIOS["override_session_forked_and_resumed"]
    results = [m["result"] for m in transcript(override, REFERENCE) if "agentCapabilities" in
               m.get("result", {})]  # fmt: skip
    caps = results[0]["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["sessionCapabilities"]["systemPrompt"] == {"override": {}}
    # after the P1 trace's restart the agent no longer advertises systemPrompt at all
    p1 = [m["result"] for m in transcript(P1_TRACE, REFERENCE) if "agentCapabilities" in
          m.get("result", {})]  # fmt: skip
    assert p1[0]["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {}
    assert "systemPrompt" not in p1[1]["agentCapabilities"]["sessionCapabilities"]


def test_fork_is_checked_against_the_unstable_schema() -> None:
    schemas = method_schemas()
    assert schemas["session/new"].request == "NewSessionRequest"
    assert schemas["session/new"].file == "acp-schema-v1.json"
    assert schemas["session/fork"].request == "ForkSessionRequest"
    assert schemas["session/fork"].file == "acp-schema-v1.unstable.json"


def test_declined_requests_and_environment_events_are_not_on_the_wire() -> None:
    trace = Trace(APPEND_AGENT, (CONNECT, Request("session_new"), Request("initialize")))
    steps = replay(trace, REFERENCE)
    assert not steps[1].step.sent  # a conforming client does not call session/new first
    messages = transcript(trace, REFERENCE)
    assert [m.get("method") for m in messages] == ["initialize", None]
    assert "(not sent)" in steps_markdown(trace, REFERENCE, "S1")
    assert "declines to send session/new" in mermaid(trace, REFERENCE, "S1")


def _base() -> list[dict[str, Any]]:
    return transcript(P1_TRACE, REFERENCE)


def _broken(edit: Any) -> list[str]:
    messages = copy.deepcopy(_base())
    edit(messages)
    return validate_transcript(messages)


def _new(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return next(m for m in messages if m.get("method") == "session/new")


def _error_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
    req = _new(messages)
    i = messages.index(req)
    messages[i + 1] = {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602}}
    return messages[i + 1]


@pytest.mark.parametrize(
    ("what", "edit", "expected"),
    [
        ("session/new without cwd", lambda ms: _new(ms)["params"].pop("cwd"), "'cwd'"),
        ("string error code", lambda ms: _error_of(ms)["error"].update(code="-32602"),
         "/error/code"),
        ("error without message", lambda ms: _error_of(ms), "'message'"),
        ("systemPrompt not an array", lambda ms: _new(ms)["params"].update(systemPrompt="a"),
         "systemPrompt"),
        ("image block without data",
         lambda ms: _new(ms)["params"].update(systemPrompt=[{"type": "image"}]), "systemPrompt"),
        ("mode not a string", lambda ms: _new(ms)["params"].update(systemPromptMode=1),
         "systemPromptMode"),
        ("capability not an object",
         lambda ms: ms[1]["result"]["agentCapabilities"]["sessionCapabilities"].update(
             systemPrompt=True), "systemPrompt"),
        ("wrong jsonrpc version", lambda ms: ms[0].update(jsonrpc="1.0"), "jsonrpc"),
        ("environment event as a message",
         lambda ms: ms.insert(0, {"jsonrpc": "2.0", "id": 0, "method": "restart", "params": {}}),
         "neither ACP v1 schema"),
        ("response to no request", lambda ms: ms.append({"jsonrpc": "2.0", "id": 99,
                                                         "result": {}}), "answers no request"),
        ("prompt result without stopReason",
         lambda ms: next(m["result"] for m in ms if "stopReason" in m.get("result", {})).pop(
             "stopReason"), "stopReason"),
        ("notification without its session",
         lambda ms: next(m for m in ms if "id" not in m)["params"].pop("sessionId"),
         "sessionId"),
    ],
)  # fmt: skip
def test_validate_transcript_has_teeth(what: str, edit: Any, expected: str) -> None:
    assert validate_transcript(_base()) == []
    problems = _broken(edit)
    assert problems, what
    assert any(expected in p for p in problems), problems


def _copy_schemas(to: Path, *names: str) -> None:
    """Copy vendored schema files (paths relative to the vendored folder) into ``to``."""
    for name in names:
        source = vendored_schemas()
        for part in name.split("/"):
            source = source / part
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        (to / name).write_bytes(source.read_bytes())


def test_schemas_are_the_vendored_package_data_unless_a_directory_is_given(
    tmp_path: Path,
) -> None:
    root = vendored_schemas()
    assert root.name == "schemas" and root.is_dir()
    assert (root / "acp-schema-v1.json").is_file() and (root / "VENDORED.md").is_file()
    # every URI's file is there and parses; the stable one has session/new, not session/fork
    for uri in SCHEMA_FILES:
        assert load_schema(uri)["$defs"], uri
    vendored = method_schemas()
    assert {"session/new", "session/fork"} <= vendored.keys()
    assert vendored["session/new"].file == "acp-schema-v1.json"
    assert vendored["session/fork"].file == "acp-schema-v1.unstable.json"
    # an override directory laid out the same way is read instead: here a stable schema whose
    # NewSessionRequest requires a field no client sends, so only the override refuses session/new
    _copy_schemas(tmp_path, "acp-schema-v1.json", "acp-schema-v1.unstable.json")
    stable = json.loads((tmp_path / "acp-schema-v1.json").read_text(encoding="utf-8"))
    stable["$defs"]["NewSessionRequest"]["required"].append("neverSent")
    (tmp_path / "acp-schema-v1.json").write_text(json.dumps(stable), encoding="utf-8")
    assert method_schemas(tmp_path) == vendored
    assert validate_transcript(_base()) == []
    problems = validate_transcript(_base(), tmp_path)
    assert problems and all("(session/new request)" in p and "neverSent" in p for p in problems)
    altered, original = (load_schema("urn:acp:schema:v1", d) for d in (tmp_path, None))
    assert "neverSent" in altered["$defs"]["NewSessionRequest"]["required"]
    assert "neverSent" not in original["$defs"]["NewSessionRequest"]["required"]
    with pytest.raises(KeyError, match="no schema has the URI"):
        load_schema("urn:acp:schema:v3")


def test_the_vendored_v2_schema_is_registered_under_its_uri() -> None:
    v2 = "urn:acp:schema:sdk-2.4.0:v2-unstable"
    assert SCHEMA_FILES[v2] == "sdk-2.4.0/acp-schema-v2.unstable.json"
    resolver = schema_registry(v2).resolver()
    prompt = resolver.lookup(f"{v2}#/$defs/SystemPrompt").contents
    assert {"mode", "content"} <= prompt["properties"].keys()
    # it is the v2 file: initialize answers with capabilities, not v1's agentCapabilities
    initialize = load_schema(v2)["$defs"]["InitializeResponse"]["properties"]
    assert "capabilities" in initialize and "agentCapabilities" not in initialize
    assert set(schema_registry()) >= set(SCHEMA_FILES)


# ---- step table ------------------------------------------------------------------------------


def _rows(md: str) -> list[list[str]]:
    return [
        [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in md.splitlines()
        if line.startswith("| ") and not line.startswith("| #")
    ]


def test_steps_table_shows_only_what_changed() -> None:
    trace = SCENARIOS["append_prompt_survives_close_and_load"]
    rows = _rows(steps_markdown(trace, REFERENCE, "P1"))
    assert len(rows) == len(trace) + 1
    assert [r[0] for r in rows] == [str(i) for i in range(len(trace) + 1)]
    changed = {int(r[0]): r[3] for r in rows}
    assert changed[3] == "s1: UNKNOWN→ACTIVE, conn=0, blocks=(a,b), mode=append, live=(BASE,a,b)"
    assert changed[4] == "s1 turn (new) saw [BASE, a, b]"
    assert changed[5].startswith("s1: ACTIVE→CLOSED")
    # session/new of s2 touches s2 only: s1 exists but did not change
    assert changed[8].startswith("s2: UNKNOWN→ACTIVE") and "s1" not in changed[8]
    assert "conn0" not in changed[8] and "profile" not in changed[8]
    assert changed[2] == (
        "conn0: UNINITIALIZED→INITIALIZED, caps " + APPEND_AGENT.label().replace("|", "\\|")
    )


def test_steps_table_marks_the_id_and_names_restarts() -> None:
    rows = _rows(steps_markdown(P1_TRACE, REFERENCE, "P1"))
    restart = rows[5][3]
    assert "restarts 0→1" in restart and "agent profile →" in restart
    assert "conn0: dropped" in restart and "s1: ACTIVE→STORED" in restart
    assert "**P1**" in rows[9][4]
    assert "**P1**" not in "".join(r[4] for r in rows[:9])


def test_changes_of_an_unchanged_world_is_empty() -> None:
    steps = replay(P1_TRACE, REFERENCE)
    assert all(changes(r.step.after, r.step.after) == [] for r in steps)
    assert any(changes(r.step.before, r.step.after) != [] for r in steps)


# ---- sequence diagram ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_mermaid_has_one_arrow_per_sent_request(case: str) -> None:
    trace, tables, rid, _ = CASES[case]
    mm = mermaid(trace, tables, rid)
    lines = mm.splitlines()
    assert lines[0] == "sequenceDiagram"
    sent = _sent_client_requests(trace, tables)
    assert len([ln for ln in lines if re.match(r"\w+->>A: ", ln)]) == len(sent)
    replies = [ln for ln in lines if re.match(r"A(-->>|--x)\w+: ", ln)]
    assert len(replies) == len(sent)
    errors = [r for r in replay(trace, tables) if r.step.reply.error]
    assert len([ln for ln in replies if "--x" in ln]) == len(errors)
    marks = [ln for ln in lines if f"✗ {rid} first violated here" in ln]
    assert len(marks) == 1
    assert "Note over A:" in mm and "participant A as Agent" in mm
    assert not any(";" in ln for ln in lines)


def test_mermaid_participants_per_connection_and_restart() -> None:
    mm = mermaid(P1_TRACE, REFERENCE, "P1")
    assert "participant c0 as Client c0\n" in mm
    assert "participant c0r1 as Client c0 (after restart 1)" in mm
    assert "restarts advertising" in mm
    lines = mm.splitlines()
    mark = next(i for i, ln in enumerate(lines) if "first violated" in ln)
    assert "9. session/prompt" in lines[mark - 2]  # right after step 9 and its reply
    two = mermaid(SCENARIOS["session_loaded_from_another_connection"], REFERENCE, "P9")
    assert "participant c1 as Client c1" in two and "c1->>A: 7. session/load" in two


# ---- review block and replay command ---------------------------------------------------------


def test_replay_command() -> None:
    assert replay_command("out/trace.itf.json") == "acp-sysprompt replay out/trace.itf.json"
    assert replay_command("a b.json", "rfd-final", "load_restores_default") == (
        "acp-sysprompt replay 'a b.json' --revision rfd-final --mutant load_restores_default"
    )


def test_review_block_names_the_requirement_and_the_replay() -> None:
    trace, tables, rid, mutant = CASES["mutant turns_use_default_prompt"]
    md = review_markdown(trace, tables, rid, "rfd-final", mutant, path="ce/trace.itf.json")
    req = REQUIREMENTS[rid]
    assert mutant is not None
    assert md.startswith(f"### {rid} violated")
    assert req.text in md and req.source in md and req.keyword.value in md
    assert MUTANTS[mutant].summary in md
    assert "exhaustive BFS: 4 steps, the shortest within the bound" in md
    assert "```sh\n" + replay_command("ce/trace.itf.json", "rfd-final", mutant) + "\n```" in md
    keep = REVISIONS["rfd-final"].states
    assert "```mermaid\n" + mermaid(trace, tables, rid, keep=keep) + "```\n" in md
    assert md.endswith(
        "```sh\n" + replay_command("ce/trace.itf.json", "rfd-final", mutant) + "\n```\n"
    )


def test_review_block_does_not_claim_a_violation_replay_does_not_show() -> None:
    trace = SCENARIOS["append_prompt_survives_close_and_load"]
    md = review_markdown(trace, REFERENCE, "P1", "rfd-final", None)
    assert md.startswith("### P1 not reproduced") and "**violated**" not in md


# ---- ITF -------------------------------------------------------------------------------------


def _walk(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return [x for k, w in v.items() if k != "#meta" for x in _walk(w)]
    if isinstance(v, list):
        return [x for w in v for x in _walk(w)]
    return [v]


@pytest.mark.parametrize("case", CASES)
def test_itf_round_trip_gives_the_same_trace_and_verdict(case: str, tmp_path: Path) -> None:
    trace, tables, rid, mutant = CASES[case]
    doc = itf(trace, tables, rid, "rfd-final", mutant)
    path = tmp_path / "t.itf.json"
    path.write_text(json.dumps(doc))
    for source in (doc, path, str(path)):
        back, meta = load_itf(source)
        assert back == trace
        assert meta["requirement"] == rid and meta["mutant"] == mutant
        assert meta["revision"] == "rfd-final"
    assert _violated(back, tables) == _violated(trace, tables) and rid in _violated(back, tables)


def test_itf_follows_the_format() -> None:
    trace, tables, rid, mutant = CASES["mutant created_despite_invalid_params"]
    doc = itf(trace, tables, rid, "rfd-final", mutant)
    meta = doc["#meta"]
    assert meta["format"] == "ITF" and meta["source"] == "acp-sysprompt-model"
    assert meta["format-description"] == "https://apalache-mc.org/docs/adr/015adr-trace.html"
    assert rid in meta["description"] and mutant in meta["description"]
    states = doc["states"]
    assert len(states) == len(trace) + 1
    assert [s["#meta"]["index"] for s in states] == list(range(len(states)))
    assert all(set(s) - {"#meta"} == set(doc["vars"]) for s in states)
    # ITF has no JSON numbers or nulls in states: integers are #bigint, absence is Option None
    leaves = _walk(states)
    assert all(isinstance(x, str | bool) for x in leaves)
    first = next(i for i, r in enumerate(replay(trace, tables), 1) if rid in r.violated)
    assert rid in states[first]["violated"]["#set"]
    assert rid not in states[first - 1]["violated"]["#set"]
    image = states[7]["action"]["systemPrompt"]
    assert image == {"tag": "Some", "value": [{"kind": "image", "text": ""}]}
    assert states[4]["action"]["systemPrompt"] == {"tag": "Some", "value": []}


# ---- all five files --------------------------------------------------------------------------


def test_write_counterexample_writes_exactly_five_files(tmp_path: Path) -> None:
    out = tmp_path / "ce" / "P1"
    paths = write_counterexample(out, P1_TRACE, REFERENCE, "P1", "rfd-final", None)
    assert set(paths) == set(FILES) == {
        "steps.md", "transcript.ndjson", "sequence.mmd", "review.md", "trace.itf.json"}  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    lines = paths["transcript.ndjson"].read_text().splitlines()
    messages = [json.loads(line) for line in lines]
    assert messages == transcript(P1_TRACE, REFERENCE)
    assert all(line == json.dumps(m, sort_keys=True, ensure_ascii=False)
               for line, m in zip(lines, messages, strict=True))  # fmt: skip
    assert validate_transcript(messages) == []
    assert paths["sequence.mmd"].read_text().startswith("sequenceDiagram")
    assert str(paths["trace.itf.json"]) in paths["review.md"].read_text()
    back, meta = load_itf(paths["trace.itf.json"])
    assert back == P1_TRACE and meta["requirement"] == "P1"


def test_a_mutant_counterexample_goes_on_until_the_wire_shows_it(tmp_path: Path) -> None:
    """created_despite_invalid_params: its shortest counterexample ends with an error that
    stored a session, which no answer shows; the files add the list that shows it and say
    so. The same trace written as a revision's counterexample (no mutant) is left as it is."""
    m = MUTANTS["created_despite_invalid_params"]
    trace = Trace(
        OVERRIDE_AGENT,
        (Request("connect", client=ClientKind.ADVERSARIAL), Request("initialize"),
         Request("session_new", mode="append")),
    )  # fmt: skip
    paths = write_counterexample(tmp_path / "m", trace, m.tables, "R15", "rfd-final", m.name)
    back, meta = load_itf(paths["trace.itf.json"])
    assert back.requests == (*trace.requests, Request("session_list"))
    assert meta["counterexample_steps"] == 3
    note = "The counterexample ends at step 3. Step 4 only shows it on the wire"
    for name in ("steps.md", "review.md"):
        assert note in paths[name].read_text(), name
    assert "counterexample ends at step 3" in paths["sequence.mmd"].read_text()
    messages = [json.loads(x) for x in paths["transcript.ndjson"].read_text().splitlines()]
    assert messages[-1]["result"]["sessions"][0]["sessionId"] == "s1"
    plain = write_counterexample(tmp_path / "r", trace, m.tables, "R15", "rfd-final", None)
    as_is, plain_meta = load_itf(plain["trace.itf.json"])
    assert as_is == trace and "counterexample_steps" not in plain_meta
    assert "only show" not in plain["review.md"].read_text()


# ---- each revision's wire --------------------------------------------------------------------

INIT = (CONNECT, Request("initialize"))
# an override agent: on the string wire its profile must not leak into the initialize result
STRING_TRACE = Trace(
    OVERRIDE_AGENT,
    (*INIT, Request("session_new", system_prompt=text("a")), Request("session_new"),
     Request("session_prompt", sid="s1")),
)  # fmt: skip
ENVELOPE_TRACE = Trace(
    OVERRIDE_AGENT,
    (*INIT, Request("session_new", system_prompt=text("a")),
     Request("session_new", system_prompt=text("b"), mode="override"),
     Request("session_close", sid="s1"),
     Request("session_load", sid="s1", system_prompt=text("a"), mode="append"),
     Request("session_resume", sid="s2", system_prompt=text("b"), mode="override"),
     Request("session_fork", sid="s1", system_prompt=text("a"), mode="append"),
     Request("session_new"),
     Request("session_prompt", sid="s1")),
)  # fmt: skip
# what an adversarial client sends: unknown and extension modes, an empty array, non-text blocks
ADVERSARIAL_ENVELOPES = Trace(
    APPEND_AGENT,
    (Request("connect", client=ClientKind.ADVERSARIAL), Request("initialize"),
     Request("session_new", system_prompt=text("a"), mode="replace"),
     Request("session_new", system_prompt=text("a"), mode="_vendor"),
     Request("session_new", system_prompt=(), mode="append"),
     Request("session_new", system_prompt=PROMPTS[-1], mode="append"),
     Request("session_new", system_prompt=(Block(BlockKind.IMAGE),), mode="append")),
)  # fmt: skip


def _sent(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in messages if m.get("method") == method]


def _capabilities(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        m["result"]["agentCapabilities"]["sessionCapabilities"]
        for m in messages
        if "agentCapabilities" in m.get("result", {})
    ]


def test_string_wire_sends_one_string_and_no_capability() -> None:
    messages = transcript(STRING_TRACE, REFERENCE, wire="string")
    news = _sent(messages, "session/new")
    assert news[0]["systemPrompt"] == "a"
    assert "systemPrompt" not in news[1]
    assert not any("systemPromptMode" in p for p in news)
    caps = _capabilities(messages)
    assert len(caps) == 1 and "systemPrompt" not in caps[0]
    assert caps[0] == {k: {} for k in ("list", "delete", "resume", "close", "fork")}
    assert validate_transcript(messages, wire="string") == []
    # the same trace on the final RFD's wire: blocks and the capability
    blocks = transcript(STRING_TRACE, REFERENCE)
    assert _sent(blocks, "session/new")[0]["systemPrompt"] == [{"type": "text", "text": "a"}]
    assert _capabilities(blocks)[0]["systemPrompt"] == {"override": {}}


def test_envelope_wire_on_new_load_resume_and_fork() -> None:
    messages = transcript(ENVELOPE_TRACE, REFERENCE, wire="envelope")
    a = {"mode": "append", "content": [{"type": "text", "text": "a"}]}
    b = {"mode": "override", "content": [{"type": "text", "text": "b"}]}
    assert [p.get("systemPrompt") for p in _sent(messages, "session/new")] == [a, b, None]
    assert [p["systemPrompt"] for p in _sent(messages, "session/load")] == [a]
    assert [p["systemPrompt"] for p in _sent(messages, "session/resume")] == [b]
    assert [p["systemPrompt"] for p in _sent(messages, "session/fork")] == [a]
    assert not any("systemPromptMode" in m.get("params", {}) for m in messages)
    assert [c["systemPrompt"] for c in _capabilities(messages)] == [{"mode": {"override": {}}}]
    assert validate_transcript(messages, wire="envelope") == []
    append = transcript(
        Trace(APPEND_AGENT, ENVELOPE_TRACE.requests[:3]), REFERENCE, wire="envelope"
    )
    assert _capabilities(append)[0]["systemPrompt"] == {}


def test_official_envelope_defs_accept_what_an_adversarial_client_sends() -> None:
    messages = transcript(ADVERSARIAL_ENVELOPES, REFERENCE, wire="envelope")
    prompts = [p["systemPrompt"] for p in _sent(messages, "session/new")]
    assert [p["mode"] for p in prompts] == ["replace", "_vendor", "append", "append", "append"]
    assert {"mode": "append", "content": []} in prompts
    assert {b["type"] for p in prompts for b in p["content"]} == {"text", "image", "resource_link"}
    assert validate_transcript(messages, wire="envelope") == []


def test_envelope_is_checked_against_the_2026_11_schema_file(tmp_path: Path) -> None:
    _copy_schemas(tmp_path, "acp-schema-v1.json", "acp-schema-v1.unstable.json")
    assert validate_transcript(transcript(P1_TRACE, REFERENCE), tmp_path) == []
    messages = transcript(ENVELOPE_TRACE, REFERENCE, wire="envelope")
    with pytest.raises(FileNotFoundError, match=r"sdk-2\.4\.0"):
        validate_transcript(messages, tmp_path, wire="envelope")


def _wire_problems(trace: Trace, wire: str, edit: Any) -> list[str]:
    messages = transcript(trace, REFERENCE, wire=wire)
    assert validate_transcript(messages, wire=wire) == []
    edit(messages)
    return validate_transcript(messages, wire=wire)


def _param(method: str, **changes: Any) -> Any:
    return lambda ms: next(m for m in ms if m.get("method") == method)["params"].update(changes)


def _envelope(method: str, edit: Any) -> Any:
    return lambda ms: edit(
        next(m for m in ms if m.get("method") == method)["params"]["systemPrompt"]
    )


def _capability(value: Any) -> Any:
    return lambda ms: _capabilities(ms)[0].update(systemPrompt=value)


@pytest.mark.parametrize(
    ("wire", "edit", "expected"),
    [
        ("envelope", _envelope("session/new", lambda sp: sp.pop("mode")),
         "/params/systemPrompt: 'mode' is a required property"),
        ("envelope", _envelope("session/load", lambda sp: sp.update(content="a")),
         "/params/systemPrompt/content: 'a' is not of type 'array'"),
        ("envelope", _envelope("session/fork", lambda sp: sp.update(mode=1)),
         "/params/systemPrompt/mode: 1 is not valid under any of the given schemas"),
        ("envelope", _envelope("session/resume", lambda sp: sp.update(content=[{"type": "image"}])),
         "/params/systemPrompt/content/0"),
        ("envelope", _param("session/new", systemPrompt="a"), "'a' is not of type 'object'"),
        ("envelope", _param("session/new", systemPromptMode="append"),
         "/params/systemPromptMode: the envelope wire has no such field"),
        ("envelope", _capability({"mode": "override"}),
         "sessionCapabilities/systemPrompt/mode: 'override' is not valid"),
        ("blocks", _param("session/new", systemPrompt="a"),
         "/params/systemPrompt: 'a' is not of type 'array'"),
        ("blocks", _param("session/load", systemPrompt=[{"type": "text", "text": "a"}]),
         "/params/systemPrompt: the blocks wire has no such field"),
        ("string", _param("session/new", systemPrompt=[{"type": "text", "text": "a"}]),
         "is not of type 'string'"),
        ("string", _param("session/new", systemPromptMode="append"),
         "/params/systemPromptMode: the string wire has no such field"),
        ("string", _capability({}),
         "sessionCapabilities/systemPrompt: the string wire has no such field"),
    ],
)  # fmt: skip
def test_validate_transcript_checks_each_wire(wire: str, edit: Any, expected: str) -> None:
    trace = ENVELOPE_TRACE if wire == "envelope" else STRING_TRACE
    if wire == "blocks":
        trace = Trace(OVERRIDE_AGENT, (*STRING_TRACE.requests, Request("session_load", sid="s1")))
    problems = _wire_problems(trace, wire, edit)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("wire", "req", "why"),
    [
        ("string", Request("session_new", system_prompt=text("a", "b")), "one string"),
        ("string", Request("session_new", system_prompt=text("a"), mode="append"), "no systemPr"),
        ("string", Request("session_load", sid="s1", system_prompt=text("a")), "session/load"),
        ("blocks", Request("session_fork", sid="s1", system_prompt=text("a")), "session/fork"),
        ("envelope", Request("session_new", mode="override"), "envelope"),
        ("envelope", Request("session_prompt", sid="s1", system_prompt=text("a")),
         "session/prompt"),
        ("envelope-v2", Request("session_load", sid="s1"), "v2 has no session/load"),
    ],
)  # fmt: skip
def test_a_request_the_wire_cannot_carry_is_an_error(wire: str, req: Request, why: str) -> None:
    # an adversarial client sends it, so the transcript has to show it too
    adversary = Request("connect", client=ClientKind.ADVERSARIAL)
    trace = Trace(OVERRIDE_AGENT, (adversary, Request("initialize"), req))
    assert replay(trace, REFERENCE)[2].step.sent
    for render in (
        lambda: transcript(trace, REFERENCE, wire=wire),
        lambda: steps_markdown(trace, REFERENCE, "P1", wire=wire),
        lambda: mermaid(trace, REFERENCE, "P1", wire=wire),
    ):
        with pytest.raises(ValueError, match=f"the {wire} wire cannot carry .*{why}"):
            render()
    with pytest.raises(ValueError, match="unknown wire"):
        transcript(trace, REFERENCE, wire="xml")


@pytest.mark.parametrize("name", REVISIONS)
def test_every_request_a_revision_admits_renders_on_its_wire(name: str) -> None:
    rev = REVISIONS[name]
    methods = ("session_new", "session_load", "session_resume", "session_fork", "session_prompt")
    admitted = [
        Request(m, sid=None if m == "session_new" else "s1", system_prompt=sp, mode=mode)
        for m in methods
        for sp in PROMPTS
        for mode in MODES
        if rev.admits(Request(m, system_prompt=sp, mode=mode))
    ]
    assert len(admitted) > len(methods)
    trace = Trace(OVERRIDE_AGENT, (*INIT, *admitted))
    steps_markdown(trace, REFERENCE, "P1", wire=rev.wire)
    adversary = Trace(trace.profile, (Request("connect", client=ClientKind.ADVERSARIAL),
                                      *trace.requests[1:]))  # fmt: skip
    assert validate_transcript(transcript(adversary, REFERENCE, wire=rev.wire), wire=rev.wire) == []


def test_revision_wire() -> None:
    assert set(WIRES) == {"blocks", "string", "envelope", "envelope-v2", "instructions"}
    assert {name: revision_wire(name) for name in REVISIONS} == {
        name: r.wire for name, r in REVISIONS.items()
    }
    assert revision_wire("rfd-final") == "blocks" and revision_wire("rfd-draft") == "string"
    assert revision_wire("pr-1494") == "string" and revision_wire("no-such-revision") == "blocks"


def test_labels_follow_the_wire() -> None:
    rows = _rows(steps_markdown(ENVELOPE_TRACE, REFERENCE, "P1", wire="envelope"))
    assert rows[3][1] == '`session/new(conn=0, systemPrompt={mode="append", content=[text "a"]})`'
    assert rows[6][1] == (
        '`session/load(conn=0, sessionId=s1, systemPrompt={mode="append", content=[text "a"]})`'
    )
    table = steps_markdown(STRING_TRACE, REFERENCE, "P1", wire="string")
    assert '`session/new(conn=0, systemPrompt="a")`' in table
    mm = mermaid(STRING_TRACE, REFERENCE, "P1", wire="string")
    assert 'c0->>A: 3. session/new(systemPrompt="a")' in mm
    assert "advertising {systemPrompt=none load_session" in mm
    assert "advertising {systemPrompt=override" in mermaid(STRING_TRACE, REFERENCE, "P1")


def test_blocks_labels_are_the_models_request_text() -> None:
    for trace in SCENARIOS.values():
        rows = _rows(steps_markdown(trace, REFERENCE, "P1"))
        assert [r[1] for r in rows[1:]] == [f"`{request_text(q)}`" for q in trace.requests]


def test_itf_round_trips_prompts_on_load_resume_and_fork(tmp_path: Path) -> None:
    doc = itf(ENVELOPE_TRACE, REFERENCE, "P1", "v1-stable", None, wire="envelope")
    assert doc["#meta"]["wire"] == "envelope"
    load = doc["states"][6]["action"]
    assert load["method"] == "session_load"
    assert load["systemPrompt"] == {"tag": "Some", "value": [{"kind": "text", "text": "a"}]}
    assert load["systemPromptMode"] == {"tag": "Some", "value": "append"}
    path = tmp_path / "t.itf.json"
    path.write_text(json.dumps(doc))
    back, meta = load_itf(path)
    assert back == ENVELOPE_TRACE
    assert [r.system_prompt for r in back.requests[5:8]] == [text("a"), text("b"), text("a")]
    assert meta["wire"] == "envelope"
    assert itf(STRING_TRACE, REFERENCE, "P1", "rfd-draft", None)["#meta"]["wire"] == "string"


def test_write_counterexample_uses_the_revisions_wire(tmp_path: Path) -> None:
    def written(out: Path) -> list[dict[str, Any]]:
        lines = (out / "transcript.ndjson").read_text().splitlines()
        return [json.loads(line) for line in lines]

    paths = write_counterexample(tmp_path / "d", STRING_TRACE, REFERENCE, "P1", "rfd-draft", None)
    assert written(tmp_path / "d") == transcript(STRING_TRACE, REFERENCE, wire="string")
    assert 'systemPrompt="a"' in paths["steps.md"].read_text()
    assert 'systemPrompt="a"' in paths["review.md"].read_text()
    assert 'systemPrompt="a"' in paths["sequence.mmd"].read_text()
    out = tmp_path / "e"
    paths = write_counterexample(out, ENVELOPE_TRACE, REFERENCE, "P1", "x", None, wire="envelope")
    messages = written(out)
    assert messages == transcript(ENVELOPE_TRACE, REFERENCE, wire="envelope")
    assert validate_transcript(messages, wire="envelope") == []
    assert load_itf(paths["trace.itf.json"])[0] == ENVELOPE_TRACE
    assert "content=[text" in paths["review.md"].read_text()
    # an unknown revision keeps the final RFD's wire
    write_counterexample(tmp_path / "f", STRING_TRACE, REFERENCE, "P1", "x", None)
    assert written(tmp_path / "f") == transcript(STRING_TRACE, REFERENCE)


def test_a_turn_streams_one_chunk_and_v2_chunks_carry_the_message_id() -> None:
    """The transcript has the agent's session/update before a turn's answer, checked against
    the schema of the wire: on v2 a chunk without its messageId is refused, and the agent's
    reply is a message of its own, not the user's (the prompt's answer names the user's)."""
    trace = Trace(
        OVERRIDE_AGENT, (*INIT, Request("session_new"), Request("session_prompt", sid="s1"))
    )
    for wire in ("blocks", "envelope-v2"):
        messages = transcript(trace, REFERENCE, wire=wire)
        assert [m.get("method") for m in messages][-3:] == [
            "session/prompt",
            "session/update",
            None,
        ]
        update = messages[-2]["params"]["update"]
        assert update["sessionUpdate"] == "agent_message_chunk"
        assert update.get("messageId") == ("m3.reply" if wire == "envelope-v2" else None)
        assert messages[-1]["result"].get("messageId") == ("m3" if wire == "envelope-v2" else None)
        assert validate_transcript(messages, wire=wire) == []
    del update["messageId"]
    assert any("session/update notification" in p for p in validate_transcript(messages, wire=wire))
