"""Issue 29, item 4: ``validate`` reads what the tool writes (conform's ``live.ndjson`` and
``--report-json``; the tee's records), takes the introspection answers as slot evidence,
refuses what it cannot read (exit 2, one line, never "clean"), shows each finding's evidence
in one line (``--quiet`` hides it), and names a prompt sent outside the standard field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from simulations import cli
from simulations.live.validate.model import OUTSIDE
from simulations.live.validate.validate import validate_files

CAPS = {"loadSession": True, "sessionCapabilities": {"systemPrompt": {}, "resume": {}}}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def conform_outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """conform's --out and --report-json on a build that breaks T13 (override keeps the
    agent's own text)."""
    d = tmp_path_factory.mktemp("conform")
    agent = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    agent += ["--mutant", "v1_override_keeps_default"]
    only = "M:v1_override_keeps_default"  # the mutant's own test: the shortest that shows it
    argv = ["conform", "--revision", "v1-stable", "--only", only, "--out", str(d / "out")]
    code = cli.main([*argv, "--report-json", str(d / "report.json"), "--", *agent])
    assert code == 1
    return d / "out" / "T13" / "live.ndjson", d / "report.json"


def test_validate_reads_conforms_live_wire(conform_outputs: tuple[Path, Path]) -> None:
    live, _ = conform_outputs
    result = validate_files([live])
    assert result.violated == ["T13"] and result.malformed == 0
    assert result.messages == len(live.read_text().splitlines())


def test_validate_reads_conforms_report(conform_outputs: tuple[Path, Path]) -> None:
    _, report = conform_outputs
    result = validate_files([report])
    assert result.violated == ["T13"] and result.malformed == 0 and result.messages > 0
    assert {f.where for f in result.findings} == {
        o["nodeid"]
        for o in json.loads(report.read_text())["requirements"]["T13"]["outcomes"]
        if o["status"] == "FAIL"
    }


def test_the_introspection_answer_is_slot_evidence(
    conform_outputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Without the results' ``_meta.systemSlot`` (a real agent has none), the introspection
    extension's answer shows the slot: T13 at that answer's line."""
    live, _ = conform_outputs
    out = tmp_path / "bare.ndjson"
    lines = []
    for text in live.read_text().splitlines():
        rec = json.loads(text)
        result = rec["message"].get("result")
        if isinstance(result, dict):
            result.pop("_meta", None)
        lines.append(json.dumps(rec))
    out.write_text("\n".join(lines) + "\n")
    result = validate_files([out])
    assert result.violated == ["T13"]
    (finding,) = result.failing
    assert json.loads(lines[finding.line - 1])["message"]["result"]["systemSlot"]
    # and without the introspection answers too, nothing shows the slot: nothing is found
    kept = [t for t in lines if "_acp_sysprompt" not in t and '"systemSlot"' not in t]
    out.write_text("\n".join(kept) + "\n")
    assert validate_files([out]).violated == []


def test_evidence_is_one_line_by_default_and_quiet_hides_it(
    conform_outputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    live, _ = conform_outputs
    code, out, _ = _run(["validate", str(live)], capsys)
    assert code == 1
    evidence = [line for line in out.splitlines() if line.startswith("    evidence: ")]
    assert len(evidence) == 1 and "system slot" in evidence[0], out
    assert out.rstrip().splitlines()[-1] == "1 violated id(s): T13"
    code, out, _ = _run(["validate", "--quiet", str(live)], capsys)
    assert code == 1 and "evidence:" not in out


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"", "empty"),
        (b'{"name": "not a log", "items": [1, 2]}\n', "not an ACP log"),
        (json.dumps({"a": {"b": [1, 2]}}, indent=2).encode(), "not an ACP log"),
        (b'{"direction": "send", "raw": "hello"}\n', "not an ACP log"),
        (b'{"requirements": {"T2": {"outcomes": []}}}\n', "no transcript to judge"),
    ],
)
def test_what_is_no_log_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, why: str
) -> None:
    path = tmp_path / "file.json"
    path.write_bytes(body)
    code, out, err = _run(["validate", str(path)], capsys)
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1, err
    assert "clean" not in out and "Traceback" not in err


def _msg(direction: str, m: dict[str, Any], process: int = 0) -> dict[str, Any]:
    return {"direction": direction, "process": process, "message": {"jsonrpc": "2.0", **m}}


def _opening(caps: dict[str, Any], process: int = 0) -> list[dict[str, Any]]:
    init = {"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    return [
        _msg("send", init, process),
        _msg(
            "recv", {"id": 0, "result": {"protocolVersion": 1, "agentCapabilities": caps}}, process
        ),
    ]


def _new_with_meta(value: object) -> list[dict[str, Any]]:
    params = {"cwd": "/w", "mcpServers": [], "_meta": {"systemPrompt": value}}
    return [
        _msg("send", {"id": 1, "method": "session/new", "params": params}),
        _msg("recv", {"id": 1, "result": {"sessionId": "s1"}}),
    ]


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "log.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("value", ["be brief", {"append": "be brief"}])
def test_a_prompt_in_meta_to_an_advertising_agent_is_advisory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    path = _write(tmp_path, _opening(CAPS) + _new_with_meta(value))
    code, out, _ = _run(["validate", str(path)], capsys)
    assert code == 0, out
    assert f"{OUTSIDE} (advisory)" in out and "an agent that follows the spec ignores it" in out
    assert out.rstrip().splitlines()[-1] == f"clean: no violation (advisory: {OUTSIDE})"
    # the field carries a prompt too: _meta is extra, nothing is lost
    both = _opening(CAPS) + _new_with_meta(value)
    both[2]["message"]["params"]["systemPrompt"] = {"mode": "append", "content": []}
    both[2]["message"]["params"]["systemPrompt"]["content"] = [{"type": "text", "text": "x"}]
    assert OUTSIDE not in {f.rid for f in validate_files([_write(tmp_path, both)]).findings}
    # an agent that advertised no field: the client may well write _meta for it
    plain = {"loadSession": True, "sessionCapabilities": {}}
    path = _write(tmp_path, _opening(plain) + _new_with_meta(value))
    assert OUTSIDE not in {f.rid for f in validate_files([path]).findings}


def test_a_request_left_open_by_an_ended_process_is_named(tmp_path: Path) -> None:
    """Records of several agent processes (a client that starts one per command): a request
    the first never answered is named once the next process shows up."""
    turn = {"id": 1, "method": "session/list", "params": {}}
    records = [*_opening(CAPS), _msg("send", turn), *_opening(CAPS, process=1)]
    result = validate_files([_write(tmp_path, records)])
    (finding,) = [f for f in result.findings if "process ended" in f.message]
    assert finding.line == 3 and finding.rid == "jsonrpc"
