"""Issue 39, item 8: the rules ``acp-sysprompt validate`` used not to see. Each test writes a
small log by hand, validates it (the Python API or the command line) and names the id it must
get and the exit code, with the nearest clean log beside it so a fix cannot pass by reporting
everything: a request before initialize (at the start, or in a later agent process) is S1; a
refused fork that nevertheless left a session is T9 for an unknown mode as for an image, T11
for an empty content array; an ``update-id`` finding is counted as the violation conform's
tier makes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulations.live.validate import model as validate_model
from simulations.live.validate.model import OUTSIDE, UPDATE
from simulations.live.validate.validate import Result, validate_files

ROOT = Path(__file__).resolve().parents[1]
TEXT = [{"type": "text", "text": "Answer in French."}]
IMAGE = [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
# an agent that advertises the prompt (append only), fork and list
CAPS = {
    "loadSession": True,
    "sessionCapabilities": {"systemPrompt": {}, "fork": {}, "list": {}, "close": {}},
}


def _request(mid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "method": method, "params": params}


def _result(mid: int, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def _error(mid: int, code: int = -32602) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": "refused"}}


def _opening(mid: int = 1) -> list[dict[str, Any]]:
    return [
        _request(mid, "initialize", {"protocolVersion": 1}),
        _result(mid, {"protocolVersion": 1, "agentCapabilities": CAPS}),
    ]


def _new(mid: int, answer: dict[str, Any] | None = None, **params: Any) -> list[dict[str, Any]]:
    """A session/new and its answer (by default: session ``s1``)."""
    sent = _request(mid, "session/new", {"cwd": "/w", "mcpServers": [], **params})
    return [sent, answer if answer is not None else _result(mid, {"sessionId": "s1"})]


def _listed(mid: int, *sids: str) -> list[dict[str, Any]]:
    sessions = [{"sessionId": s, "cwd": "/w"} for s in sids]
    return [_request(mid, "session/list", {}), _result(mid, {"sessions": sessions})]


def _write(tmp_path: Path, name: str, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    return path


def _ids(result: Result) -> dict[str, int]:
    return {f.rid: f.line for f in result.findings}


def _cli(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "simulations", "validate", str(path), *extra]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


# ---- 1. S1: a request before initialize -------------------------------------------------------


def test_a_session_request_before_initialize_is_s1(tmp_path: Path) -> None:
    """A log whose first request is a session/new, sent before any initialize: S1 at that
    request, whether the agent refused it or (as the model has no way to) served it. Served, it
    used to be a note alone: the departure left the step unjudged, the client's rules with it."""
    for name, answer in (("served", _result(1, {"sessionId": "s1"})), ("refused", _error(1))):
        path = _write(tmp_path, f"{name}.ndjson", [*_new(1, answer), *_opening(2)])
        done = _cli(path)
        assert done.returncode == 1, (name, done.stdout, done.stderr)
        assert done.stdout.rstrip().splitlines()[-1] == "1 violated id(s): S1", done.stdout
        assert _ids(validate_files([path])) == {"S1": 1}, name
    # initialize first: clean
    clean = _write(tmp_path, "clean.ndjson", [*_opening(1), *_new(2)])
    assert _cli(clean).returncode == 0
    assert validate_files([clean]).findings == []


def _records(process: int, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tee's records of ``lines`` (requests sent, answers received) in agent ``process``."""
    return [
        {"direction": "send" if "method" in m else "recv", "process": process, "message": m}
        for m in lines
    ]


def test_a_request_before_initialize_in_a_later_process_is_s1(tmp_path: Path) -> None:
    """Tee records of two agent processes (a client that starts the agent once per command):
    the second process is a new agent, its connection uninitialised, so a session/new sent
    there before initialize is S1 at its record, served or refused. It used to be judged on
    the first process's initialised connection. The same records with the second process
    opened by initialize are clean."""
    first = _records(0, [*_opening(1), *_new(2)])
    for name, answer in (("served", _result(1, {"sessionId": "s2"})), ("refused", _error(1))):
        second = _records(1, [*_new(1, answer), *_opening(2)])
        path = _write(tmp_path, f"{name}.ndjson", [*first, *second])
        result = validate_files([path])
        assert _ids(result) == {"S1": len(first) + 1}, (name, result.render())
        assert result.exit_code == 1
        assert _cli(path).returncode == 1
    again = _records(1, [*_opening(1), *_new(2, _result(2, {"sessionId": "s2"}))])
    clean = _write(tmp_path, "clean.ndjson", [*first, *again])
    result = validate_files([clean])
    assert result.findings == [] and result.exit_code == 0, result.render()


# ---- 2, 3. a refused fork that left a session behind ------------------------------------------


def _forked(tmp_path: Path, name: str, prompt: dict[str, Any], left: bool) -> Result:
    """session/new s1, a session/fork of it with ``prompt`` refused -32602 (line 6), then a
    list that shows the fork (s2) where ``left``: what the refusal created after all."""
    fork = {"sessionId": "s1", "cwd": "/w", "mcpServers": [], "systemPrompt": prompt}
    lines = [
        *_opening(1),
        *_new(2),
        _request(3, "session/fork", fork),
        _error(3),
        *_listed(4, "s1", *(("s2",) if left else ())),
    ]
    return validate_files([_write(tmp_path, f"{name}.ndjson", lines)])


@pytest.mark.parametrize("mode", ["bogus", "_vendor_mode"])
def test_a_refused_fork_for_an_unknown_mode_that_left_a_session_is_t9(
    tmp_path: Path, mode: str
) -> None:
    """An unknown mode (or an underscore extension the agent lacks) is refused, as T10 asks,
    yet the list shows the fork it created: T9 (an agent that cannot use the prompt answers
    with an error and forks nothing) at the refusal, as for an image block. It used to go
    unjudged: the hidden effect was looked for with the mode as sent, which no edit of the
    model's tables serves, not as an agent that ignored the mode it could not take."""
    image = _forked(tmp_path, "image", {"mode": "append", "content": IMAGE}, left=True)
    assert _ids(image) == {"T4": 5, "T9": 6}, image.render()  # T4: the client sent an image
    result = _forked(tmp_path, mode, {"mode": mode, "content": TEXT}, left=True)
    assert _ids(result) == {"T9": 6}, result.render()
    assert result.exit_code == 1 and result.violated == ["T9"]
    # the refusal that forked nothing: clean
    kept = _forked(tmp_path, f"{mode}-kept", {"mode": mode, "content": TEXT}, left=False)
    assert kept.findings == [], kept.render()


def test_a_refused_empty_content_that_left_a_session_is_t11(tmp_path: Path) -> None:
    """An empty content array (the client breaks T5 sending it) refused -32602, yet the list
    shows the fork it created: T11 (an agent may refuse an empty array, in which case no session
    is created, loaded, resumed or forked) at the refusal. No check of the model judges T11 (a
    MAY: refusing and accepting are both allowed), so only T5 used to be reported."""
    empty = {"mode": "append", "content": []}
    result = _forked(tmp_path, "empty", empty, left=True)
    assert _ids(result) == {"T5": 5, "T11": 6}, result.render()
    assert result.exit_code == 1 and result.violated == ["T5", "T11"]
    kept = _forked(tmp_path, "empty-kept", empty, left=False)
    assert _ids(kept) == {"T5": 5}, kept.render()  # refused and nothing forked: the agent kept it
    # session/new too: the refused new's session shows in the list
    lines = [*_opening(1), *_new(2, _error(2), systemPrompt=empty), *_listed(3, "s1")]
    new = validate_files([_write(tmp_path, "new.ndjson", lines)])
    assert _ids(new) == {"T5": 3, "T11": 4}, new.render()


# ---- 4. update-id counts as conform's tier says -----------------------------------------------


def _stray_update(tmp_path: Path) -> Path:
    """A turn of s1 during which the agent sends a message chunk for a session it never handed
    out (line 6): conform's UPDATE-ID, validate's ``update-id``."""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    update = {"sessionId": "elsewhere", "update": chunk}
    turn = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hello"}]}
    lines = [
        *_opening(1),
        *_new(2),
        _request(3, "session/prompt", turn),
        {"jsonrpc": "2.0", "method": "session/update", "params": update},
        _result(3, {"stopReason": "end_turn"}),
    ]
    return _write(tmp_path, "stray.ndjson", lines)


def test_an_update_id_finding_is_counted_as_conform_tiers_it(tmp_path: Path) -> None:
    """conform judges UPDATE-ID MANDATORY; validate reported the same check and summed up
    "0 violated id(s)" (its JSON ``violated`` empty), counting requirement ids alone. Now the
    summary and ``violated`` name it, the exit code is 1; a prompt outside the field stays
    advisory (conform-client's tier for it): reported, exit 0."""
    path = _stray_update(tmp_path)
    done = _cli(path)
    assert done.returncode == 1, done.stdout
    assert done.stdout.rstrip().splitlines()[-1] == f"1 violated id(s): {UPDATE}", done.stdout
    data = json.loads(_cli(path, "--json").stdout)
    assert data["violated"] == [UPDATE]
    assert [(f["id"], f["line"], f["advisory"]) for f in data["findings"]] == [(UPDATE, 6, False)]
    meta = {"cwd": "/w", "mcpServers": [], "_meta": {"systemPrompt": "be brief"}}
    outside = [*_opening(1), _request(2, "session/new", meta), _result(2, {"sessionId": "s1"})]
    done = _cli(_write(tmp_path, "outside.ndjson", outside))
    assert done.returncode == 0 and f"{OUTSIDE} (advisory)" in done.stdout, done.stdout
    assert done.stdout.rstrip().splitlines()[-1] == f"clean: no violation (advisory: {OUTSIDE})"


def test_validate_reads_conforms_tier_not_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One table: were conform to rank UPDATE-ID ADVISORY, validate would report update-id as
    advisory and exit 0 (the tier is looked up in ``simulations.live.oracle.tiers.tier``,
    conform's)."""
    from simulations.live.oracle import judge, tiers
    from simulations.live.oracle.results import ADVISORY, MANDATORY, UPDATE_ID

    assert judge.tier is tiers.tier and judge.tier(UPDATE_ID) == MANDATORY
    real = tiers.tier
    monkeypatch.setattr(
        tiers, "tier", lambda rid, party="agent": ADVISORY if rid == UPDATE_ID else real(rid, party)
    )
    validate_model.live_tier_fails.cache_clear()
    try:
        result = validate_files([_stray_update(tmp_path)])
    finally:
        validate_model.live_tier_fails.cache_clear()
    assert [(f.rid, f.advisory) for f in result.findings] == [(UPDATE, True)]
    assert result.exit_code == 0 and result.violated == []
