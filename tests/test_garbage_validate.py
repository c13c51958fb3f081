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
from hypothesis import given, settings
from hypothesis import strategies as st

from simulations.live.process.tee import read_json, too_big
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


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=40,
)


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@settings(deadline=None)
@given(_json, st.integers(0, 8))
def test_the_strict_reading_measures_depth_before_parsing(value: object, limit: int) -> None:
    """The depth ``too_big`` measures on the text (strings skipped whole) is the parsed
    value's: what ``validate``, the tee and the reference agent refuse is exactly what nests
    deeper than their limit."""
    text = json.dumps(value)
    deep = too_big(text, limit) is not None
    assert deep == (_depth(value) > limit)
    reading = read_json(text, limit)
    assert (reading.problem is not None) == deep
    if not deep:
        assert reading.value == value and not reading.twice


@settings(deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet='[]{}",:\\0aNn ', max_size=200))
def test_the_strict_reading_never_raises(garbage: bytes | str) -> None:
    """Any bytes or text: a value or a problem, never an exception."""
    reading = read_json(garbage, 4)
    assert reading.problem is None or reading.value is None
