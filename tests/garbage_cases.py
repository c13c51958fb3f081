"""One table of what a client can send that is no good request (issue 57), shared by the
tests of the three programs that read it: the reference agent answers each case with JSON-RPC
2.0's error and goes on (``tests/test_garbage_agent.py``), the tee passes it and records it as
strict JSON (the same file), and ``validate`` names it at its line and goes on judging
(``tests/test_garbage_validate.py``). A new case here reaches all three.

Each ``Garbage`` is one line as a client sends it (no newline), the error code the reference
agent answers it with (id null; an array of codes where it answers a batch; None: no answer at
all), and the finding kinds ``validate`` reports at its line (at least these)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

# the reference agent's limits (docs/reference-agent.md; ``test_the_table_knows_the_limits``
# holds them equal to ``simulations.live.reference.stdio``'s)
LINE_LIMIT, DEPTH_LIMIT, BATCH_LIMIT = 8 << 20, 64, 1_000
PARSE, INVALID = -32700, -32600


@dataclass(frozen=True)
class Garbage:
    name: str
    line: bytes
    agent: int | tuple[int, ...] | None  # the code (or a batch's codes) answered, id null
    validate: frozenset[str]  # finding ids at the line (malformed, jsonrpc, a rule's id)


def _request(rest: str, rid: str = "1") -> bytes:
    return ('{"jsonrpc": "2.0", "id": ' + rid + ", " + rest + "}").encode()


def _nested(depth: int) -> bytes:
    return _request('"method": "session/list", "params": {"x": ' + "[" * depth + "]" * depth + "}")


NEW = '{"cwd": "/w", "mcpServers": []}'
HIDDEN = (
    '{"cwd": "/w", "mcpServers": [], '
    '"systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "x"}]}}'
)
MALFORMED, JSONRPC = frozenset({"malformed"}), frozenset({"jsonrpc"})

CASES: tuple[Garbage, ...] = (
    Garbage("method-null", _request('"method": null'), INVALID, MALFORMED),
    Garbage("method-number", _request('"method": 5, "params": {}'), INVALID, MALFORMED),
    Garbage("id-true", _request('"method": "session/list"', "true"), INVALID, MALFORMED),
    Garbage("id-object", _request('"method": "session/list"', "{}"), INVALID, MALFORMED),
    Garbage("id-array", _request('"method": "session/list"', "[1, 2]"), INVALID, MALFORMED),
    Garbage("id-nan", _request('"method": "session/list"', "NaN"), INVALID, MALFORMED),
    Garbage("id-infinity", _request('"method": "session/list"', "-Infinity"), INVALID, MALFORMED),
    Garbage("id-overflow", _request('"method": "session/list"', "1e400"), INVALID, MALFORMED),
    Garbage(
        "nan-in-params",
        _request('"method": "session/list", "params": {"x": NaN}'),
        PARSE,
        MALFORMED,
    ),
    Garbage("no-jsonrpc", b'{"id": 1, "method": "session/list"}', INVALID, JSONRPC),
    Garbage(
        "jsonrpc-1.0", b'{"jsonrpc": "1.0", "id": 1, "method": "session/list"}', INVALID, JSONRPC
    ),
    Garbage(
        "jsonrpc-number", b'{"jsonrpc": 2.0, "id": 1, "method": "session/list"}', INVALID, JSONRPC
    ),
    Garbage("no-method-no-result", _request('"params": {}'), INVALID, MALFORMED),
    Garbage("a-response-to-nothing", b'{"jsonrpc": "2.0", "id": 99, "result": {}}', None, JSONRPC),
    Garbage("not-json", b'{"jsonrpc": "2.0", "id": 1, "method": ', PARSE, MALFORMED),
    Garbage(
        "not-utf8",
        _request('"method": "session/list", "params": {"x": "?"}').replace(b"?", b"\xff"),
        PARSE,
        MALFORMED,
    ),
    Garbage("deeper-than-the-limit", _nested(DEPTH_LIMIT + 1), PARSE, MALFORMED),
    Garbage("900-deep", _nested(900), PARSE, MALFORMED),
    Garbage("5000-deep", _nested(5000), PARSE, MALFORMED),
    Garbage("100000-open", b"[" * 100_000, PARSE, MALFORMED),
    Garbage("empty-batch", b"[]", INVALID, JSONRPC),
    Garbage(
        "batch-of-garbage",
        b'[7, {"jsonrpc": "2.0", "id": 2, "method": null}]',
        (INVALID, INVALID),
        MALFORMED,
    ),
    Garbage(
        "batch-too-long",
        b"[" + b",".join([_request('"method": "session/list"')] * (BATCH_LIMIT + 1)) + b"]",
        INVALID,
        JSONRPC,  # validate reads it: one id for all
    ),
    Garbage(
        "params-twice",
        _request(f'"method": "session/new", "params": {HIDDEN}, "params": {NEW}'),
        INVALID,
        MALFORMED,
    ),
    Garbage(
        "over-the-line-limit",
        b'{"jsonrpc": "2.0", "method": "_pad", "params": {"pad": "' + b"x" * LINE_LIMIT + b'"}}',
        PARSE,
        frozenset(),
    ),
)


def strict(raw: bytes) -> object:
    """``raw`` as JSON, read as strictly as JSON is: UTF-8, no NaN or Infinity (no JSON), no
    member given twice in one object; an AssertionError otherwise. The tests' own reading,
    not the code under test's."""

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        names = [k for k, _ in items]
        assert len(set(names)) == len(names), f"a member given twice: {raw[:200]!r}"
        return dict(items)

    def constant(name: str) -> object:
        raise AssertionError(f"{name} is no JSON: {raw[:200]!r}")

    def number(text: str) -> float:
        value = float(text)
        assert math.isfinite(value), f"{text} is out of range: {raw[:200]!r}"
        return value

    try:
        text = raw.decode("utf-8")
        hooks = {"object_pairs_hook": pairs, "parse_constant": constant, "parse_float": number}
        return json.loads(text, **hooks)  # type: ignore[arg-type]
    except (ValueError, RecursionError) as e:
        raise AssertionError(f"no JSON ({e}): {raw[:200]!r}") from None


def depth(value: object) -> int:
    """How deep ``value`` nests (a scalar: 0), walked without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, level = todo.pop()
        items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if items is not None:
            deepest = max(deepest, level)
            todo.extend((item, level + 1) for item in items)
    return deepest


def answers(out: list[bytes]) -> list[object]:
    """The agent's answer lines, each read strictly (``strict``)."""
    return [strict(raw) for raw in out]


def codes(answer: object) -> int | tuple[int, ...]:
    """The code of an error answer with id null, or a batch's codes."""
    if isinstance(answer, list):
        return tuple(c for a in answer for c in (codes(a),) if isinstance(c, int))
    assert isinstance(answer, dict) and answer.get("id", "missing") is None, answer
    code = answer["error"]["code"]
    assert isinstance(code, int)
    return code


__all__ = ["CASES", "Garbage", "answers", "codes", "depth", "strict"]
