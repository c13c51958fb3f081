"""``acp-sysprompt validate``: counterexample transcripts report their id, conforming runs and
clean captures report nothing, doctored captures and malformed lines are caught at their line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.types import Block, BlockKind, Caps, PromptCap, Request
from simulations import api
from simulations.engines.bounds import WIRE, Bound
from simulations.engines.stateful import Trace
from simulations.engines.trace import replay
from simulations.outputs.forms import write_counterexample
from simulations.validate import Result, validate_files

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
    assert _ids(result) == {"T4": 3, "T9": 4}, result.render()


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
