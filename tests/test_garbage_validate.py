"""Issue 57: ``validate`` judges what a client can send that is no good request.

Each case of ``tests/garbage_cases.py`` is written into a log between a good initialize and a
good ``session/new`` (the agent's answers the reference agent's own, advertising no
``systemPrompt``): the case is named at its line with the finding kinds the table gives, the
requests around it are judged clean, and nothing raises. A member given twice (an
unadvertised prompt hidden in the first ``params``) is refused with a finding naming it
(before, it was judged by the last copy and passed); a batch line's requests are judged
(before, the line was "not a JSON-RPC object" and its requests skipped).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from garbage_cases import CASES, HIDDEN, NEW, Garbage

from simulations.live.reference.agent import ReferenceAgent, build_for
from simulations.live.validate.validate import Result, validate_files

GOOD_NEW = {"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": json.loads(NEW)}


def _answers() -> tuple[dict[str, Any], dict[str, Any]]:
    agent = ReferenceAgent(build_for(revision="v1-stable", caps=""))  # advertises nothing
    init = agent.handle(7, "initialize", {"protocolVersion": 1}).response
    new = agent.handle(8, "session/new", json.loads(NEW)).response
    return init, new


def _validate(tmp_path: Path, *middle: bytes) -> Result:
    init, new = _answers()
    request = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}}
    lines = [json.dumps(request).encode(), json.dumps(init).encode(), *middle]
    lines += [json.dumps(GOOD_NEW).encode(), json.dumps(new).encode()]
    log = tmp_path / "session.ndjson"
    log.write_bytes(b"\n".join(lines) + b"\n")
    return validate_files([log])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_validate_names_garbage_at_its_line(case: Garbage, tmp_path: Path) -> None:
    result = _validate(tmp_path, case.line)
    at = {f.rid for f in result.findings if f.line == 3}
    elsewhere = [f.render() for f in result.findings if f.line != 3]
    assert case.validate <= at, [f.render() for f in result.findings]
    assert not elsewhere, elsewhere


def test_a_member_given_twice_is_refused_naming_it(tmp_path: Path) -> None:
    """The issue's case: a prompt the agent never advertised, hidden in the first of two
    ``params``; a reader that keeps the first copy sees it. Before: judged by the last copy,
    clean, exit 0."""
    twice = (
        '{"jsonrpc": "2.0", "id": 9, "method": "session/new", '
        f'"params": {HIDDEN}, "params": {NEW}}}'
    ).encode()
    result = _validate(tmp_path, twice)
    named = [f for f in result.findings if f.line == 3 and "'params' given twice" in f.message]
    assert named and result.exit_code == 1, [f.render() for f in result.findings]


def test_a_batch_lines_requests_are_judged(tmp_path: Path) -> None:
    """A batch holding a session/new sent before initialize, answered by a batch, is judged
    as that request and its answer would be on lines of their own: S1 (before: one
    malformed finding, the request skipped, and its answer a second one)."""
    new = {"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": json.loads(NEW)}
    answer = {"jsonrpc": "2.0", "id": 9, "result": {"sessionId": "s1"}}
    found = []
    for request, response in ((new, answer), ([new], [answer])):
        log = tmp_path / "session.ndjson"
        log.write_text(json.dumps(request) + "\n" + json.dumps(response) + "\n")
        found.append(sorted((f.line, f.rid) for f in validate_files([log]).findings))
    assert found[0] == [(1, "S1")]
    assert found[1] == found[0]
