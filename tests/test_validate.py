"""``acp-sysprompt validate``: counterexample transcripts report their id, conforming runs and
clean captures report nothing, doctored captures and malformed lines are caught at their line."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import script_module

from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.types import Block, BlockKind, Caps, PromptCap, Request
from simulations import api
from simulations.engines.bounds import WIRE, Bound
from simulations.engines.trace import Trace, replay
from simulations.live.validate.validate import Result, validate_files
from simulations.outputs.forms import shown_on_the_wire, write_counterexample
from simulations.wire.acp import transcript

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "validate"
A = (Block(BlockKind.TEXT, "a"),)
B = (Block(BlockKind.TEXT, "b"),)
IMAGE = (Block(BlockKind.IMAGE),)
OVERRIDE = Caps(PromptCap.OVERRIDE, load_session=True, resume=True, fork=True, close=True)
APPEND = Caps(PromptCap.APPEND, load_session=True, resume=True, close=True)
NONE = Caps(PromptCap.NONE, load_session=True, resume=True, close=True)
OPEN = (Request("connect"), Request("initialize"))


def _ids(result: Result) -> dict[str, int]:
    """Every id found (advisory ones too: T12 is a SHOULD) → its line."""
    return {f.rid: f.line for f in result.findings}


def _written(tmp_path: Path, name: str, trace: Trace, rid: str, mutant: str | None) -> Path:
    """The transcript the project's counterexample forms write for ``trace``."""
    revision = MUTANTS[mutant].revision if mutant else "v1-stable"
    tables = MUTANTS[mutant].tables if mutant else REVISIONS[revision].tables
    paths = write_counterexample(tmp_path / name, trace, tables, rid, revision, mutant)
    return paths["transcript.ndjson"]


# hand-written traces, each a counterexample of the id under the mutant (checked by replay);
# the last three end with a turn, which is where the wire shows the system slot
CASES = [
    ("v1_rejects_text_content", "T8", (Request("session_new", system_prompt=A, mode="append"),)),
    (
        "v1_client_resumes_with_image",
        "T4",
        (
            Request("session_new", system_prompt=A, mode="append"),
            Request("session_close", sid="s1"),
            Request("session_resume", sid="s1", system_prompt=IMAGE, mode="append"),
        ),
    ),
    (
        "v1_client_loads_with_empty_content",
        "T5",
        (
            Request("session_new"),
            Request("session_close", sid="s1"),
            Request("session_load", sid="s1", system_prompt=(), mode="append"),
        ),
    ),
    (
        "v1_load_applies_oversized_prompt",
        "T9",
        (
            Request("session_new"),
            Request("session_close", sid="s1"),
            Request("session_load", sid="s1", system_prompt=(Block(BlockKind.TEXT, "big"),),
                    mode="append"),
        ),
    ),
    (
        "v1_append_ignores_content",
        "T12",
        (Request("session_new", system_prompt=A, mode="append"),
         Request("session_prompt", sid="s1")),
    ),
    (
        "v1_load_without_prompt_empties_slot",
        "T15",
        (
            Request("session_new", system_prompt=A, mode="append"),
            Request("session_close", sid="s1"),
            Request("session_load", sid="s1"),
            Request("session_prompt", sid="s1"),
        ),
    ),
    (
        "v1_load_applies_default_for_new_prompt",
        "T16",
        (
            Request("session_new", system_prompt=A, mode="append"),
            Request("session_close", sid="s1"),
            Request("session_load", sid="s1", system_prompt=B, mode="append"),
            Request("session_prompt", sid="s1"),
        ),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("mutant", "rid", "tail"), CASES, ids=[c[0] for c in CASES])
def test_counterexample_transcripts_report_their_id(
    tmp_path: Path, mutant: str, rid: str, tail: tuple[Request, ...]
) -> None:
    trace = Trace(OVERRIDE, (*OPEN, *tail))
    assert any(rid in r.violated for r in replay(trace, MUTANTS[mutant].tables))  # a real one
    log = _written(tmp_path, mutant, trace, rid, mutant)
    result = validate_files([log], MUTANTS[mutant].revision)
    assert rid in _ids(result), result.render()
    # the same trace run by the revision's reference agent is clean
    clean = validate_files([_written(tmp_path, "ref", trace, rid, None)], "v1-stable")
    assert rid not in _ids(clean), clean.render()


@pytest.mark.parametrize("mutant", ["v1_rejects_text_content", "rejects_text_blocks"])
def test_api_counterexamples_report_their_id(tmp_path: Path, mutant: str) -> None:
    m = MUTANTS[mutant]
    result = api.check(mutant=mutant, bound=Bound("wire", "the wire scope", (WIRE,)))
    trace = result.counterexamples[m.violates]
    log = _written(tmp_path, mutant, trace, m.violates, mutant)
    found = validate_files([log], m.revision)
    assert m.violates in _ids(found), found.render()


CONFORMING = [
    (OVERRIDE, (Request("session_new", system_prompt=A, mode="override"),
                Request("session_prompt", sid="s1"), Request("session_close", sid="s1"),
                Request("session_load", sid="s1", system_prompt=A, mode="override"),
                Request("session_prompt", sid="s1"),
                Request("session_fork", sid="s1", system_prompt=A, mode="override"),
                Request("session_prompt", sid="s2"))),
    (APPEND, (Request("session_new", system_prompt=A, mode="append"), Request("session_new"),
              Request("session_prompt", sid="s2"), Request("session_close", sid="s2"),
              Request("session_resume", sid="s2"), Request("session_prompt", sid="s2"))),
    (NONE, (Request("session_new"), Request("session_prompt", sid="s1"),
            Request("session_close", sid="s1"), Request("session_load", sid="s1"),
            Request("restart", profile=NONE), Request("connect"), Request("initialize"),
            Request("session_load", sid="s1"), Request("session_prompt", sid="s1"))),
]  # fmt: skip


@pytest.mark.parametrize(("profile", "tail"), CONFORMING, ids=["override", "append", "none"])
def test_conforming_runs_report_nothing(
    tmp_path: Path, profile: Caps, tail: tuple[Request, ...]
) -> None:
    trace = Trace(profile, (*OPEN, *tail))
    log = _written(tmp_path, "run", trace, "P1", None)
    result = validate_files([log], "v1-stable")
    assert result.exit_code == 0 and not result.findings, result.render()


def test_kit_report_clean_then_doctored(tmp_path: Path) -> None:
    clean = validate_files([FIXTURES / "acp-tck-report.json"], "v1-stable")
    assert not clean.findings and clean.messages == 9, clean.render()  # one test, read once
    doc = json.loads((FIXTURES / "acp-tck-report.json").read_text())
    entries = doc["requirements"][0]["tests"][0]["transcript"]
    reply = json.loads(entries[5]["raw"])
    reply["result"]["sessionId"] = "sess-A"  # the second session/new returns the first id
    entries[5]["raw"] = json.dumps(reply)
    bad = tmp_path / "report.json"
    bad.write_text(json.dumps(doc, indent=2))
    result = validate_files([bad], "v1-stable")
    assert _ids(result) == {"S6": 6}, result.render()
    assert result.findings[0].where.endswith("test_session_ids_unique")


def test_sacp_tee_clean_then_doctored(tmp_path: Path) -> None:
    clean = validate_files([FIXTURES / "sacp-tee.log"], "v1-stable")
    assert not clean.findings, clean.render()
    lines = (FIXTURES / "sacp-tee.log").read_text().splitlines()
    entry = json.loads(lines[2])  # session/new: the client sends an image, the agent accepts
    entry["message"]["params"]["systemPrompt"]["content"] = [
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    ]
    lines[2] = json.dumps(entry)
    bad = tmp_path / "tee.log"
    bad.write_text("\n".join(lines) + "\n")
    result = validate_files([bad], "v1-stable")
    # the load of that live session (served since issue 27, Q11) re-sends the text, not the
    # image the session was created with: T6, advisory
    assert _ids(result) == {"T4": 3, "T9": 4, "T6": 7}, result.render()


def test_malformed_lines_are_findings_not_tracebacks(tmp_path: Path) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    lines = [
        json.dumps(init),
        "{not json",
        json.dumps({"jsonrpc": "2.0", "id": 9, "result": {}}),  # answers nothing
        json.dumps([1, 2]),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": "x"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                    "params": {"sessionId": 5, "prompt": []}}),
        json.dumps({"jsonrpc": "1.0", "id": 1, "result": {"protocolVersion": 1}}),
        json.dumps({"direction": "sideways", "message": {}}),
    ]  # fmt: skip
    log = tmp_path / "bad.ndjson"
    log.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "simulations", "validate", "--json", str(log)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    found = {(f["id"], f["line"]) for f in json.loads(proc.stdout)["findings"]}
    assert {("malformed", 2), ("jsonrpc", 3), ("malformed", 4), ("malformed", 5)} <= found
    assert ("malformed", 6) in found  # sessionId of the wrong type
    assert ("jsonrpc", 7) in found  # jsonrpc "1.0"
    assert ("malformed", 8) in found  # an unknown direction


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    for argv in (["validate", str(tmp_path / "missing")], ["validate", "--revision", "x", "f"]):
        proc = subprocess.run(
            [sys.executable, "-m", "simulations", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith("acp-sysprompt: error: argument")


# ---- every mutant's counterexample (the fixture tools/mutant_traces.py writes) --------------


TRACES = script_module("tools/mutant_traces.py", "mutant_traces")
FIXTURE: dict[str, Any] = TRACES.read_fixture()


def _reported(result: Result) -> set[str]:
    """Findings, and P ids from the notes (end-to-end guarantees are reported as notes)."""
    return {f.rid for f in result.findings} | {f.rid for f in result.notes if f.rid[0] == "P"}


def test_the_fixture_has_every_mutant() -> None:
    assert sorted(FIXTURE) == sorted(MUTANTS)
    assert all(FIXTURE[n]["id"] == m.violates for n, m in MUTANTS.items())


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutant_counterexample_reports_its_id(tmp_path: Path, name: str) -> None:
    """The transcript ``counterexample --mutant NAME`` writes (the shortest counterexample and,
    where the wire does not show it yet, the observing epilogue after which it does),
    validated against the mutant's revision, reports the id the mutant declares (P ids among
    the notes): all 55."""
    m = MUTANTS[name]
    trace = TRACES.trace_of(FIXTURE[name])
    assert m.violates in replay(trace, m.tables)[-1].violated  # a counterexample of its id
    path = _written(tmp_path, name, trace, m.violates, name)
    assert m.violates in _reported(validate_files([path], m.revision))


def _validated(tmp_path: Path, name: str) -> tuple[Result, list[dict[str, Any]]]:
    """The mutant's written counterexample transcript, validated, and its messages."""
    m = MUTANTS[name]
    path = _written(tmp_path, name, TRACES.trace_of(FIXTURE[name]), m.violates, name)
    log = [json.loads(line) for line in path.read_text().splitlines()]
    return validate_files([path], m.revision), log


def _log_file(tmp_path: Path, name: str, log: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(m) + "\n" for m in log))
    return path


def test_a_later_answer_shows_what_an_error_hid(tmp_path: Path) -> None:
    """An error that nevertheless changed the store is judged with that effect, at the errored
    answer's line, once a later answer needs it: R15 (created_despite_invalid_params: the list
    shows the session the refused session/new stored), P6 (error_still_detaches: the close
    refused on another connection detached the session, so its own connection's close is
    refused). Cut before that answer, the log shows nothing of it."""
    result, log = _validated(tmp_path, "created_despite_invalid_params")
    assert [m.get("method") for m in log][-2:] == ["session/list", None]
    errored = next(i for i, m in enumerate(log, 1) if "error" in m)
    assert (errored, len(log)) == (4, 6)
    assert _ids(result) == {"R13": 3, "R15": 4}  # R13: the client sent a mode alone
    assert "(shown by the answer at line 6)" in next(n.message for n in result.notes if n.line == 4)
    cut = validate_files([_log_file(tmp_path, "cut.ndjson", log[:-2])], "rfd-final")
    assert _ids(cut) == {"R13": 3}
    result, log = _validated(tmp_path, "error_still_detaches")
    errored = next(i for i, m in enumerate(log, 1) if "error" in m)
    assert (errored, len(log)) == (8, 10) and "error" in log[-1]
    assert {n.rid: n.line for n in result.notes if n.rid[0] == "P"} == {"P6": errored}
    assert result.findings == []
    cut = validate_files([_log_file(tmp_path, "cut2.ndjson", log[:-2])], "rfd-final")
    assert cut.findings == [] and cut.notes == []


def test_a_restart_that_lost_the_prompt_is_named_at_the_first_load(tmp_path: Path) -> None:
    """restart_forgets_prompts (R18) and alt_restart_forgets_instructions (A18): the first load
    after the restart (an initialize answered on an initialised connection) comes back without
    the stored prompt; besides the restore id (R16, A12) the store's id is reported there,
    naming the restart's line, and the message says the wire cannot tell the two apart."""
    for name, rid, restore in (
        ("restart_forgets_prompts", "R18", "R16"),
        ("alt_restart_forgets_instructions", "A18", "A12"),
    ):
        result, log = _validated(tmp_path, name)
        inits = [i for i, m in enumerate(log, 1) if "agentCapabilities" in m.get("result", {})]
        assert len(inits) == 2 and log[-2]["method"] == "session/load"
        found = {f.rid: f for f in result.findings}
        assert found[rid].line == found[restore].line == len(log)
        assert f"the restart at line {inits[1]}" in found[rid].message
        assert "the wire cannot tell" in found[rid].message
    # the reference agent's log of the same run: the load restores the prompt, nothing is said
    trace = observed(TRACES.trace_of(FIXTURE["restart_forgets_prompts"]), "restart_forgets_prompts")
    ref = REVISIONS["rfd-final"].tables
    paths = write_counterexample(tmp_path / "ref", trace, ref, "R18", "rfd-final", None)
    clean = validate_files([paths["transcript.ndjson"]], "rfd-final")
    assert clean.findings == [] and {n.rid for n in clean.notes} == {"P9"}


def test_a_resume_that_replays_shows_once_the_session_had_a_turn(tmp_path: Path) -> None:
    """resume_replays_history (S8): the epilogue gives the session a turn, the next resume
    streams it back as session/update notifications before its answer; without them the
    same log is clean."""
    result, log = _validated(tmp_path, "resume_replays_history")
    assert _ids(result) == {"S8": len(log)}
    replayed = [m for m in log[-4:] if m.get("method") == "session/update"]
    assert [u["params"]["update"]["sessionUpdate"] for u in replayed] == [
        "user_message_chunk",
        "agent_message_chunk",
    ]
    quiet = [m for m in log if m.get("method") != "session/update"]
    assert validate_files([_log_file(tmp_path, "quiet.ndjson", quiet)], "rfd-final").findings == []


def observed(trace: Trace, mutant: str) -> Trace:
    """The trace with the mutant's observing epilogue (what its counterexample files show)."""
    return shown_on_the_wire(trace, MUTANTS[mutant].tables, mutant)


def test_an_attach_result_slot_is_judged(tmp_path: Path) -> None:
    """A doctored session/new result whose _meta.systemSlot drops the client text breaks the
    composition rule there, before any turn; the untouched transcript is clean."""
    trace = Trace(OVERRIDE, (*OPEN, Request("session_new", system_prompt=A)))
    path = _written(tmp_path, "clean", trace, "R21", None)
    assert validate_files([path], "v1-stable").findings == []
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["result"]["_meta"]["systemSlot"] == ["BASE", "a"]
    last["result"]["_meta"]["systemSlot"] = ["BASE"]
    path.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    assert "T12" in _ids(validate_files([path], "v1-stable"))


# ---- the reference agent's recorded runs ------------------------------------------------------


def _recorded(trace: Trace, revision: str, store: Path) -> list[dict[str, Any]]:
    """A live run of ``python -m simulations.agent`` as a log: each request, the session/update
    notifications the agent sent before its answer, the answer."""
    test_agent = importlib.import_module("test_agent")
    wire = REVISIONS[revision].wire
    args = test_agent.agent_args(revision, trace.profile, store)
    log: list[dict[str, Any]] = test_agent.run_live(trace, REVISIONS[revision].tables, wire, args)
    return log


def test_the_reference_agent_recorded_run_reports_nothing(tmp_path: Path) -> None:
    """A live v1-stable run (prompt, close, a turn refused on the closed session, load with
    the prompt re-sent, restart, load again, fork) validated as recorded: no finding, no
    departure noted — an errored answer and a restart are where validate looks for hidden
    effects, and there are none. The log is the model's transcript, notifications included.
    The same log with the history replay dropped from the last load is caught (S8)."""
    envelope = dict(system_prompt=A, mode="append")
    trace = Trace(
        Caps(PromptCap.OVERRIDE, load_session=True, resume=True, fork=True, close=True),
        (
            *OPEN,
            Request("session_new", **envelope),  # type: ignore[arg-type]
            Request("session_prompt", sid="s1"),
            Request("session_close", sid="s1"),
            Request("session_prompt", sid="s1"),  # -32600: not attached
            Request("session_load", sid="s1", **envelope),  # type: ignore[arg-type]
            Request("session_prompt", sid="s1"),
            Request("restart"),
            *OPEN,
            Request("session_load", sid="s1", **envelope),  # type: ignore[arg-type]
            Request("session_fork", sid="s1", **envelope),  # type: ignore[arg-type]
            Request("session_prompt", sid="s2"),
        ),
    )
    log = _recorded(trace, "v1-stable", tmp_path / "store")
    assert log == transcript(trace, REVISIONS["v1-stable"].tables, wire="envelope")
    assert sum(m.get("method") == "session/update" for m in log) == 9  # 3 chunks, 2 + 4 replayed
    assert sum("error" in m for m in log) == 1
    path = tmp_path / "live.ndjson"
    path.write_text("".join(json.dumps(m) + "\n" for m in log))
    result = validate_files([path], "v1-stable")
    assert result.findings == []
    # no departure from the model; the P ids are the protocol's own gaps (P9: after the
    # restart, the load's client cannot tell the prompt), noted for any agent
    assert {n.rid for n in result.notes} <= {"P9"}
    load = max(i for i, m in enumerate(log) if m.get("method") == "session/load")
    answer = next(i for i in range(load + 1, len(log)) if log[i].get("id") == log[load]["id"])
    replay_of_last = range(load + 1, answer)
    assert replay_of_last and all(log[i]["method"] == "session/update" for i in replay_of_last)
    doctored = [m for i, m in enumerate(log) if i not in replay_of_last]
    path.write_text("".join(json.dumps(m) + "\n" for m in doctored))
    assert "S8" in _ids(validate_files([path], "v1-stable"))


def test_the_command_line_shows_a_p_id_without_notes(tmp_path: Path) -> None:
    """P ids are reported (as notes, never failing): the plain output names them."""
    trace = TRACES.trace_of(FIXTURE["turns_use_default_prompt"])
    path = _written(tmp_path, "p1", trace, "P1", "turns_use_default_prompt")
    cmd = [sys.executable, "-m", "simulations", "validate", str(path), "--revision", "rfd-final"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "P id broken (end-to-end guarantee; exit code unaffected)" in out.stdout
    assert "P1" in out.stdout and "note:" not in out.stdout


def test_an_update_for_a_session_nobody_handed_out_is_named(tmp_path: Path) -> None:
    """Issue 27 (conform's UPDATE-ID in a log): a session/update naming a session no
    session/new or fork of the log handed out, and no open request names, is an ``update-id``
    finding at its line; the same log with the update naming the prompted session is clean."""
    trace = Trace(
        Caps(PromptCap.APPEND),
        (*OPEN, Request("session_new"), Request("session_prompt", sid="s1")),
    )
    log = transcript(trace, REVISIONS["rfd-final"].tables, wire="blocks")
    turn = next(i for i, m in enumerate(log) if m.get("method") == "session/prompt")
    update = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "elsewhere",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "x"},
            },
        },
    }
    stray = [*log[: turn + 1], update, *log[turn + 1 :]]
    result = validate_files([_log_file(tmp_path, "stray.ndjson", stray)], "rfd-final")
    assert [(f.rid, f.line) for f in result.findings] == [("update-id", turn + 2)]
    assert "'elsewhere'" in result.findings[0].message
    own = [*log[: turn + 1], update | {"params": {**update["params"], "sessionId": "s1"}}]
    clean = validate_files(
        [_log_file(tmp_path, "own.ndjson", [*own, *log[turn + 1 :]])], "rfd-final"
    )
    assert clean.findings == [], clean.render()


def test_a_turns_update_for_another_known_session_is_named(tmp_path: Path) -> None:
    """Issue 27, item 4: during a turn of s1, a message chunk for s2 (a session the log handed
    out, with no turn, load or resume open) is an ``update-id`` finding; an update s2 may get
    at any time (its available commands) is not, nor is the chunk while s2's turn is open."""
    trace = Trace(
        Caps(PromptCap.APPEND),
        (
            *OPEN,
            Request("session_new"),
            Request("session_new"),
            Request("session_prompt", sid="s1"),
        ),
    )
    log = transcript(trace, REVISIONS["rfd-final"].tables, wire="blocks")
    turn = next(i for i, m in enumerate(log) if m.get("method") == "session/prompt")
    sids = [m["result"]["sessionId"] for m in log if "sessionId" in (m.get("result") or {})]
    assert sids == ["s1", "s2"] and log[turn]["params"]["sessionId"] == "s1"

    def update(kind: str, extra: dict[str, Any]) -> dict[str, Any]:
        body = {"sessionUpdate": kind, **extra}
        params = {"sessionId": "s2", "update": body}
        return {"jsonrpc": "2.0", "method": "session/update", "params": params}

    chunk = update("agent_message_chunk", {"content": {"type": "text", "text": "x"}})
    commands = update("available_commands_update", {"availableCommands": []})
    for name, note, found in (("chunk", chunk, True), ("commands", commands, False)):
        mixed = [*log[: turn + 1], note, *log[turn + 1 :]]
        result = validate_files([_log_file(tmp_path, f"{name}.ndjson", mixed)], "rfd-final")
        got = [(f.rid, f.line) for f in result.findings]
        assert got == ([("update-id", turn + 2)] if found else []), (name, result.render())
    # s2's own turn open beside s1's (two requests in flight): its chunk belongs to it
    second = dict(log[turn], id=999, params={**log[turn]["params"], "sessionId": "s2"})
    answer = {"jsonrpc": "2.0", "id": 999, "result": {"stopReason": "end_turn"}}
    both = [*log[:turn], second, log[turn], chunk, answer, *log[turn + 1 :]]
    result = validate_files([_log_file(tmp_path, "both.ndjson", both)], "rfd-final")
    assert [f.rid for f in result.findings] == [], result.render()


@pytest.mark.parametrize("method", ["session_load", "session_resume"])
def test_a_reopen_the_model_refuses_but_the_agent_serves_is_judged_for_s8(
    tmp_path: Path, method: str
) -> None:
    """Issue 27, item 4: a load or resume of a deleted session, which the model refuses and no
    edit of its tables serves, answered with a result: S8 is still judged on the wire, as
    ``conform`` does — a resume that replays history, a load that replays none of a session
    whose updates the log shows. Before, it was a note alone. Served the other way round (a
    load that replays, a resume that does not), only the note."""
    caps = Caps(PromptCap.OVERRIDE, load_session=True, resume=True, close=True, delete=True)
    steps = (
        *OPEN,
        Request("session_new"),
        Request("session_prompt", sid="s1"),
        Request("session_delete", sid="s1"),
        Request(method, sid="s1"),
    )
    log = transcript(Trace(caps, steps), REVISIONS["v1-stable"].tables, wire="envelope")
    ask = max(i for i, m in enumerate(log) if m.get("method") == method.replace("_", "/"))
    assert log[-1]["id"] == log[ask]["id"] and log[-1]["error"]["code"] == -32600
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    update = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s1", "update": chunk},
    }
    served = {"jsonrpc": "2.0", "id": log[ask]["id"], "result": {}}
    wrong = [*log[:-1], update, served] if method == "session_resume" else [*log[:-1], served]
    right = [*log[:-1], served] if method == "session_resume" else [*log[:-1], update, served]
    result = validate_files([_log_file(tmp_path, "wrong.ndjson", wrong)], "v1-stable")
    assert [(f.rid, f.line) for f in result.findings] == [("S8", len(wrong))], result.render()
    assert "the model has no way to" in result.notes[0].message
    result = validate_files([_log_file(tmp_path, "right.ndjson", right)], "v1-stable")
    assert result.findings == [], result.render()


def test_s8_evidence_is_the_load_answered_without_its_history(tmp_path: Path) -> None:
    """Issue 44: a load the model refuses with -32602 (an empty content array re-sent, which a
    client may not send: T5), served by the agent with no history replayed. S8's evidence was
    the note the same answer left (the agent succeeded where the model answers error -32602),
    not what S8 is about; it names the load request, its session and what came without it: no
    session/update before the answer."""
    steps = (
        *OPEN,
        Request("session_new"),
        Request("session_prompt", sid="s1"),
        Request("session_close", sid="s1"),
        Request("session_load", sid="s1", system_prompt=A, mode="append"),
    )
    log = transcript(Trace(OVERRIDE, steps), REVISIONS["v1-stable"].tables, wire="envelope")
    load = max(i for i, m in enumerate(log) if m.get("method") == "session/load")
    assert log[-1]["id"] == log[load]["id"] and "result" in log[-1]
    # the load re-sends an empty content array instead, and is served without its history
    log[load]["params"]["systemPrompt"]["content"] = []
    served = [*log[: load + 1], {"jsonrpc": "2.0", "id": log[load]["id"], "result": {}}]
    result = validate_files([_log_file(tmp_path, "served.ndjson", served)], "v1-stable")
    assert any("-32602" in n.message for n in result.notes)  # the note the old evidence quoted
    (s8,) = [f for f in result.findings if f.rid == "S8"]
    assert s8.line == len(served), result.render()
    assert s8.evidence.startswith(f"line {load + 1} session/load of session 's1'"), s8.evidence
    assert "no session/update before the session/load answer" in s8.evidence
    assert "-32602" not in s8.evidence
