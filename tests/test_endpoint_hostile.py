"""The recording model endpoint against a hostile caller: every bad request has an HTTP answer
(a status line and a one-line reason) and the endpoint goes on serving; an idle connection is
closed after the read timeout, its thread freed; connections past ``MAX_CONNECTIONS`` are
refused, not served by a thread each; what is kept of the calls is bounded in bytes, and what
was left out is counted."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from simulations.live.endpoint.endpoint import BODY_LIMIT, CALLS_BYTES_KEPT, ModelEndpoint
from simulations.live.endpoint.model_calls import TEXT_KEPT, parse_call
from simulations.live.endpoint.model_client import ANTHROPIC

LIVENESS = 10.0  # seconds any socket here waits at most: a bound on a hang, never a timing
GOOD = json.dumps(
    {"model": "m", "system": "slot", "messages": [{"role": "user", "content": "hi"}]}
).encode()


@pytest.fixture
def ep() -> Iterator[ModelEndpoint]:
    with ModelEndpoint(read_timeout=LIVENESS / 2) as endpoint:
        yield endpoint


def _connect(endpoint: ModelEndpoint) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", endpoint.port), timeout=LIVENESS)
    s.settimeout(LIVENESS)
    return s


def _answer(s: socket.socket) -> bytes:
    """What came back until the endpoint closed the connection, or one whole answer."""
    got = b""
    while True:
        head, sep, rest = got.partition(b"\r\n\r\n")
        if sep:
            fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
            if len(rest) >= int(fields.get(b"Content-Length", b"0")):
                return got
        try:
            piece = s.recv(1 << 16)
        except ConnectionResetError:
            return got
        if not piece:
            return got
        got += piece


def _send(endpoint: ModelEndpoint, data: bytes, *, end: bool = True) -> bytes:
    """Send ``data`` on a new connection (then end the sending side, where ``end``) and read
    the answer."""
    with _connect(endpoint) as s:
        s.sendall(data)
        if end:
            s.shutdown(socket.SHUT_WR)
        return _answer(s)


def _status(answer: bytes) -> str:
    return answer.split(b"\r\n", 1)[0].decode("latin-1")


def _reason(answer: bytes) -> str:
    body = json.loads(answer.partition(b"\r\n\r\n")[2])
    reason = body["error"]
    assert isinstance(reason, str) and reason and "\n" not in reason
    return reason


def _post(headers: str, body: bytes = b"") -> bytes:
    return f"POST /v1/messages HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body


def _still_serves(endpoint: ModelEndpoint) -> None:
    before = endpoint.last_seq
    got = _send(endpoint, _post(f"Content-Length: {len(GOOD)}\r\n", GOOD), end=False)
    assert _status(got) == "HTTP/1.1 200 OK", got[:200]
    assert endpoint.last_seq == before + 1 and endpoint.calls[-1].user == "hi"


def _chunked(*pieces: bytes) -> bytes:
    return _post("Transfer-Encoding: chunked\r\n", b"".join(pieces))


DEEP = b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

HOSTILE = {
    # a length that is not a number of bytes: read to the end of the stream before
    "negative length": (_post("Content-Length: -1\r\n", GOOD), 400, "Content-Length"),
    "non-numeric length": (_post("Content-Length: abc\r\n", GOOD), 400, "Content-Length"),
    "signed length": (_post("Content-Length: +16\r\n", GOOD), 400, "Content-Length"),
    "two lengths": (
        _post(f"Content-Length: {len(GOOD)}\r\nContent-Length: 3\r\n", GOOD),
        400,
        "Content-Length",
    ),
    "a length past the cap": (
        _post(f"Content-Length: {BODY_LIMIT + 1}\r\n", GOOD),
        413,
        "too large",
    ),
    "a chunk size that is not hex": (_chunked(b"zz\r\n", GOOD, b"\r\n0\r\n\r\n"), 400, "chunk"),
    "a negative chunk size": (_chunked(b"-5\r\n", GOOD, b"\r\n0\r\n\r\n"), 400, "chunk"),
    "a chunk size line without an end": (_chunked(b"1" * 200), 400, "chunk"),
    "a chunk without its CRLF": (_chunked(b"2\r\n{}XX0\r\n\r\n"), 400, "chunk"),
    "a chunk past the cap": (_chunked(b"%x\r\n" % (BODY_LIMIT + 1)), 413, "too large"),
    "a transfer coding it does not know": (
        _post("Transfer-Encoding: gzip\r\n", GOOD),
        501,
        "Transfer-Encoding",
    ),
    "a body shorter than its length": (
        _post(f"Content-Length: {len(GOOD) + 10}\r\n", GOOD),
        400,
        "ended",
    ),
    "JSON 100,000 deep": (_post(f"Content-Length: {len(DEEP)}\r\n", DEEP), 400, "deep"),
    "a length past the cap, the body awaiting 100-continue": (
        _post(f"Expect: 100-continue\r\nContent-Length: {BODY_LIMIT + 1}\r\n"),
        413,
        "too large",
    ),
    "a body that is not UTF-8": (_post("Content-Length: 4\r\n", b'"\xff"\r\n'), 400, "UTF-8"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_request_gets_an_answer_and_the_endpoint_goes_on(
    ep: ModelEndpoint, name: str
) -> None:
    request, code, said = HOSTILE[name]
    got = _send(ep, request)
    assert _status(got).startswith(f"HTTP/1.1 {code} "), (name, got[:300])
    assert said in _reason(got), got[:300]
    assert ep.calls == [] and ep.refused == 1
    _still_serves(ep)


def test_the_unix_socket_is_served_the_same(tmp_path: Path) -> None:
    with ModelEndpoint(socket_dir=str(tmp_path), read_timeout=LIVENESS) as ep:
        assert ep.socket_path is not None
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(LIVENESS)
            s.connect(ep.socket_path)
            s.sendall(_post("Content-Length: -1\r\n", GOOD))
            got = _answer(s)
        assert _status(got) == "HTTP/1.1 400 Bad Request" and "Content-Length" in _reason(got)
        _still_serves(ep)


def test_chunks_past_the_cap_together_are_refused_before_they_are_read(
    ep: ModelEndpoint,
) -> None:
    """Each chunk under the cap, the two together over it: refused at the second chunk's size
    line, before its bytes are read."""
    half = BODY_LIMIT // 2 + 1
    got = _send(ep, _chunked(b"%x\r\n" % half, b"x" * half, b"\r\n%x\r\n" % half))
    assert _status(got).startswith("HTTP/1.1 413 ") and "too large" in _reason(got)
    _still_serves(ep)


def test_a_chunked_body_is_read_as_a_whole(ep: ModelEndpoint) -> None:
    pieces = [GOOD[:10], GOOD[10:]]
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\nX-T: 1\r\n\r\n"
    with _connect(ep) as s:
        s.sendall(_chunked(body))
        assert _status(_answer(s)) == "HTTP/1.1 200 OK" and ep.calls[-1].user == "hi"
        s.sendall(_post(f"Content-Length: {len(GOOD)}\r\n", GOOD))  # read where that ended
        assert _status(_answer(s)) == "HTTP/1.1 200 OK" and ep.last_seq == 2


def _wait(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + LIVENESS
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_an_idle_connection_is_closed_after_the_read_timeout() -> None:
    """Idle from the start, idle after an answered call (keep-alive), idle in its headers and
    idle in its body: each is closed after ``read_timeout`` and its thread is freed (a body
    that stops coming is answered 408)."""
    with ModelEndpoint(read_timeout=0.2) as ep:
        with _connect(ep) as idle, _connect(ep) as kept, _connect(ep) as headers:
            kept.sendall(_post(f"Content-Length: {len(GOOD)}\r\n", GOOD))
            assert _status(_answer(kept)) == "HTTP/1.1 200 OK"
            headers.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")
            for s in (idle, kept, headers):
                assert s.recv(1) == b""  # closed by the endpoint, well within LIVENESS
        with _connect(ep) as body:
            body.sendall(_post(f"Content-Length: {len(GOOD)}\r\n", GOOD[:5]))
            got = _answer(body)
            assert _status(got) == "HTTP/1.1 408 Request Timeout", got
            assert "arrive" in _reason(got)
        _wait(lambda: ep.connections == 0, "the handler threads are not freed")
        _still_serves(ep)


def test_connections_past_the_limit_are_refused_without_a_thread() -> None:
    with ModelEndpoint(max_connections=3, read_timeout=LIVENESS) as ep:
        held = [_connect(ep) for _ in range(3)]
        try:
            _wait(lambda: ep.connections == 3, "three connections served")
            with _connect(ep) as extra:
                got = _answer(extra)
            assert _status(got) == "HTTP/1.1 503 Service Unavailable", got
            assert "connections" in _reason(got) and ep.connections == 3
        finally:
            for s in held:
                s.close()
        _wait(lambda: ep.connections == 0, "the held connections are freed")
        _still_serves(ep)


def test_stop_ends_the_connections_it_serves() -> None:
    ep = ModelEndpoint(read_timeout=LIVENESS * 10)
    ep.start()
    with _connect(ep) as s:
        _wait(lambda: ep.connections == 1, "the connection served")
        ep.stop()
        assert s.recv(1) == b""
    _wait(lambda: ep.connections == 0, "its thread freed")


# ---- what is kept --------------------------------------------------------------------------


def _big(n: int, slot: int, user: int = 10) -> dict[str, object]:
    head, tail = f"head of slot {n}. ", f" tail of slot {n}."
    system = head + "s" * (slot - len(head) - len(tail)) + tail
    prompt = f"turn {n} " + "u" * user + f" end of turn {n}"
    return {"system": system, "messages": [{"role": "user", "content": prompt}]}


def test_a_calls_slot_and_prompt_are_kept_to_a_bound_head_and_tail() -> None:
    """A slot (or a prompt) over ``TEXT_KEPT`` characters is kept as its head and its tail:
    where a client text stands at either end of a slot, it is still found; what was left out
    is counted on the call."""
    call = parse_call(ANTHROPIC, "/v1/messages", {}, _big(1, 3 * TEXT_KEPT, 3 * TEXT_KEPT))
    assert len(call.slot_text) == len(call.user) == TEXT_KEPT + 1  # head, a line break, tail
    assert call.slot_text.startswith("head of slot 1. ")
    assert call.slot_text.endswith(" tail of slot 1.")
    assert call.user.startswith("turn 1 ") and call.user.endswith(" end of turn 1")
    sent = 3 * TEXT_KEPT + len("turn 1 ") + 3 * TEXT_KEPT + len(" end of turn 1")
    assert call.clipped == sent - 2 * TEXT_KEPT
    small = parse_call(ANTHROPIC, "/v1/messages", {}, _big(2, 1000))
    assert small.clipped == 0 and len(small.slot_text) == 1000


def test_the_calls_kept_are_bounded_in_bytes_the_newest_kept() -> None:
    """Past ``CALLS_BYTES_KEPT`` the oldest calls are dropped (a turn is judged by the calls
    after its prompt was sent, the newest): the bytes kept stay under the bound, the calls
    kept are the newest in order, and every call dropped is counted, also as dropped after a
    given call (``dropped_since``)."""
    ep = ModelEndpoint()
    n = 2 * CALLS_BYTES_KEPT // TEXT_KEPT
    for i in range(1, n + 1):
        ep.record(ANTHROPIC, "/v1/messages", {}, _big(i, 2 * TEXT_KEPT))
    kept = ep.calls
    assert sum(len(c.slot_text) + len(c.user) for c in kept) <= ep.kept_bytes <= CALLS_BYTES_KEPT
    assert 0 < len(kept) < n and ep.dropped == n - len(kept) and ep.clipped == n
    assert [c.seq for c in kept] == list(range(n - len(kept) + 1, n + 1))
    assert kept[-1].slot_text.endswith(f" tail of slot {n}.")
    assert ep.dropped_since(0) == ep.dropped and ep.dropped_since(n - len(kept)) == 0
    assert ep.dropped_since(ep.dropped - 3) == 3 and ep.dropped_since(n) == 0
    assert len(ep.since(0)) == len(kept)


def test_the_bound_holds_through_the_socket(ep: ModelEndpoint) -> None:
    """Calls of 20 MiB each, sent whole through the socket: each is answered and kept clipped,
    and what is kept stays under the bound."""
    size = 20 << 20
    for i in range(1, 4):
        body = json.dumps(_big(i, size)).encode()
        got = _send(ep, _post(f"Content-Length: {len(body)}\r\n", body), end=False)
        assert _status(got) == "HTTP/1.1 200 OK"
    assert ep.last_seq == 3 and ep.clipped == 3 and ep.kept_bytes <= CALLS_BYTES_KEPT
    assert all(len(c.slot_text) <= TEXT_KEPT + 1 for c in ep.calls)
