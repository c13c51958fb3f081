"""A recording fake model API on 127.0.0.1: what an agent puts in its model's system slot.

Every ACP agent sends each turn to a model API. Pointed at this endpoint instead (a base-URL
setting: ``ANTHROPIC_BASE_URL``, a Codex provider's ``base_url``, or the reference agent's
``--model-endpoint``), the agent gets a short text back for every call, and each call is kept
as a ``ModelCall``: which API, the system slot's text pieces in order, the newest user
message (the turn's prompt), whether it offers tools, and the ACP session it names where the
request carries one. Three APIs, streamed (Server-Sent Events) or not, as the agents call them:

* Anthropic Messages, ``POST …/messages``: the slot is the top-level ``system`` (a string or
  text blocks) and any ``role: "system"`` item of ``messages``; the session is
  ``metadata.user_id`` (a JSON string with ``session_id``, or an id ending
  ``session_<uuid>``) or the ``x-claude-code-session-id`` header;
* OpenAI Responses, ``POST …/responses``: ``instructions`` and the ``developer`` and ``system``
  items of ``input``; the session is the ``session_id`` or ``conversation_id`` header, else
  ``prompt_cache_key``;
* OpenAI Chat Completions, ``POST …/chat/completions``: the ``system`` and ``developer``
  messages.

What a slot means is read by ``symbols``: the client's texts by containment and order, the
agent's own text (``BASE``) by the lines it shares with the slots of sessions the client gave
no prompt (``BaseText``); never by equality of the whole slot, since real slots carry
per-request header lines and identity lines. Anything else (``HEAD /``, a model list) gets an
empty 200, an unknown path 404; a body over ``BODY_LIMIT`` 413. Only loopback is bound.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from model.types import BASE

ANTHROPIC, RESPONSES, CHAT = "anthropic", "responses", "chat"
APIS = (ANTHROPIC, RESPONSES, CHAT)
REPLY = "(fake model) ok"  # the text every call is answered with
BODY_LIMIT = 32 << 20  # bytes of one request body
CALLS_KEPT = 10_000  # calls kept; the oldest are dropped past it (``ModelEndpoint.dropped``)
MODEL = "fake-model"
_SESSION_IN_ID = re.compile(r"session_([0-9A-Za-z-]{8,})")


@dataclass(frozen=True)
class ModelCall:
    """One call the agent made to its model."""

    api: str
    path: str
    system: tuple[str, ...]  # the system slot's text pieces, in the order the request has them
    user: str  # the newest user message's text ("" where it has none)
    tools: bool  # the call offers tools: a turn's own call (side calls, titles, offer none)
    session: str | None  # the ACP session the request names, where it names one
    stream: bool
    seq: int  # 1, 2, … in arrival order
    at: float = 0.0  # time.monotonic() at arrival

    @property
    def slot_text(self) -> str:
        return "\n".join(self.system)


def api_of(path: str) -> str | None:
    """The API a POST to ``path`` speaks (None: not a model call)."""
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith("/messages") and not bare.endswith("/count_tokens"):
        return ANTHROPIC
    if bare.endswith("/responses"):
        return RESPONSES
    if bare.endswith("/chat/completions"):
        return CHAT
    return None


def _texts(content: object, kinds: Iterable[str] = ("text", "input_text")) -> list[str]:
    """The texts of a message's content: a string, or a list of blocks with ``text``."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    wanted = set(kinds)
    return [
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") in wanted and isinstance(b.get("text"), str)
    ]


def _last_user(items: object, key: str = "role") -> str:
    if not isinstance(items, list):
        return ""
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get(key) == "user":
            return "\n".join(_texts(item.get("content")))
    return ""


def _session_of_user_id(user_id: object) -> str | None:
    if not isinstance(user_id, str):
        return None
    try:
        decoded = json.loads(user_id)
    except ValueError:
        decoded = None
    if isinstance(decoded, Mapping) and isinstance(decoded.get("session_id"), str):
        return str(decoded["session_id"])
    found = _SESSION_IN_ID.search(user_id)
    return found.group(1) if found else None


def parse_call(
    api: str, path: str, headers: Mapping[str, str], body: Mapping[str, Any], seq: int = 0
) -> ModelCall:
    """What a request body of ``api`` shows (headers with lower-case names)."""
    system: list[str] = []
    session: str | None = None
    if api == ANTHROPIC:
        system += _texts(body.get("system"))
        messages = body.get("messages")
        for m in messages if isinstance(messages, list) else ():
            if isinstance(m, Mapping) and m.get("role") == "system":
                system += _texts(m.get("content"))
        user = _last_user(messages)
        metadata = body.get("metadata")
        if isinstance(metadata, Mapping):
            session = _session_of_user_id(metadata.get("user_id"))
        session = session or headers.get("x-claude-code-session-id")
    elif api == RESPONSES:
        instructions = body.get("instructions")
        if isinstance(instructions, str):
            system.append(instructions)
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        for m in items if isinstance(items, list) else ():
            if isinstance(m, Mapping) and m.get("role") in ("developer", "system"):
                system += _texts(m.get("content"))
        user = _last_user(items)
        cache_key = body.get("prompt_cache_key")
        session = (
            headers.get("session_id")
            or headers.get("conversation_id")
            or (cache_key if isinstance(cache_key, str) else None)
        )
    else:
        messages = body.get("messages")
        for m in messages if isinstance(messages, list) else ():
            if isinstance(m, Mapping) and m.get("role") in ("system", "developer"):
                system += _texts(m.get("content"))
        user = _last_user(messages)
    tools = body.get("tools")
    return ModelCall(
        api=api,
        path=path,
        system=tuple(system),
        user=user,
        tools=isinstance(tools, list) and bool(tools),
        session=session,
        stream=body.get("stream") is True,
        seq=seq,
        at=time.monotonic(),
    )


# ---- what the endpoint answers -----------------------------------------------------------------


def _sse(event: str | None, data: Mapping[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def answer(api: str, stream: bool, seq: int, text: str = REPLY) -> tuple[str, list[bytes]]:
    """The content type and the body (one chunk, or one per event) of the answer to a call."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    if api == ANTHROPIC:
        mid = f"msg_fake_{seq}"
        message = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not stream:
            return "application/json", [json.dumps(message).encode()]
        start = {**message, "content": [], "stop_reason": None}
        return "text/event-stream", [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    if api == RESPONSES:
        rid, iid = f"resp_fake_{seq}", f"msg_fake_{seq}"
        item = {
            "id": iid,
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        done_usage = {
            **usage,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        response = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "model": MODEL,
            "status": "completed",
            "output": [item],
            "usage": done_usage,
        }
        if not stream:
            return "application/json", [json.dumps(response).encode()]
        opening = {**response, "status": "in_progress", "output": [], "usage": None}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": opening}),
            (
                "response.output_item.added",
                {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
            ),
            (
                "response.output_text.delta",
                {"item_id": iid, "output_index": 0, "content_index": 0, "delta": text},
            ),
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": response}),
        ]
        return "text/event-stream", [
            _sse(kind, {"type": kind, "sequence_number": n, **data})
            for n, (kind, data) in enumerate(events)
        ]
    cid = f"chatcmpl-fake-{seq}"
    created = int(time.time())
    if not stream:
        completion = {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return "application/json", [json.dumps(completion).encode()]

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL,
            "choices": [choice],
        }
        return _sse(None, body)

    return "text/event-stream", [
        chunk({"role": "assistant", "content": text}, None),
        chunk({}, "stop"),
        _sse(None, "[DONE]"),
    ]


# ---- the server ----------------------------------------------------------------------------------


def _server_class() -> Any:
    """The HTTP server class (``http.server`` is imported here, when an endpoint starts: the
    reference agent imports this module for ``call_model`` alone, at every start)."""
    import socketserver
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class _Handler(BaseHTTPRequestHandler):
        server: Any
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the calls are the record; nothing on stderr

        def _empty(self, code: int, body: bytes = b"") -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._empty(200)

        def do_GET(self) -> None:
            self._empty(200, b'{"data": []}')

        def do_POST(self) -> None:
            api = api_of(self.path)
            size = int(self.headers.get("Content-Length") or 0)
            if size > BODY_LIMIT:
                self.close_connection = True
                self._empty(413, b'{"error": "body too large"}')
                return
            raw = self._body(size)
            if api is None:
                self._empty(404, b'{"error": "not a model API path"}')
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, Mapping):
                self._empty(400, b'{"error": "the body is not a JSON object"}')
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            call = self.server.endpoint.record(api, self.path, headers, body)
            kind, chunks = answer(api, call.stream, call.seq, self.server.endpoint.reply)
            self.send_response(200)
            self.send_header("Content-Type", kind)
            if call.stream:
                self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
            self.end_headers()
            for c in chunks:
                self.wfile.write(c)
            self.wfile.flush()

        def _body(self, size: int) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while len(out) <= BODY_LIMIT:
                    line = self.rfile.readline(64)
                    n = int(line.split(b";")[0].strip() or b"0", 16)
                    if n == 0:
                        self.rfile.readline(64)
                        break
                    out += self.rfile.read(n)
                    self.rfile.readline(64)
                return bytes(out)
            return self.rfile.read(size) if size else b""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        endpoint: ModelEndpoint

        def __init__(self, address: tuple[str, int]) -> None:
            super().__init__(address, _Handler)

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a caller that hung up mid-answer: nothing to report, nothing on stderr

    class _UnixServer(socketserver.ThreadingUnixStreamServer):
        daemon_threads = True
        endpoint: ModelEndpoint

        def __init__(self, path: str) -> None:
            super().__init__(path, _Handler)

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    return _Server, _UnixServer


@dataclass
class ModelEndpoint:
    """The recording endpoint: ``start()`` gives its base URL (``http://127.0.0.1:PORT``),
    ``calls`` what came, ``stop()`` ends it (also as a context manager)."""

    reply: str = REPLY
    calls: list[ModelCall] = field(default_factory=list)
    dropped: int = 0  # calls no longer kept (past ``CALLS_KEPT``)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    socket_dir: str | None = None  # where to serve on a Unix socket too (``socket_path``)
    _server: Any = field(default=None, repr=False)
    _unix: Any = field(default=None, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, repr=False)
    _seq: int = 0

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model endpoint is not running")
        return int(self._server.server_address[1])

    @property
    def socket_path(self) -> str | None:
        """The Unix socket it also serves on (agents in a network namespace of their own reach
        it through ``simulations.live.sandbox``); None without ``socket_dir``."""
        return None if self._unix is None else str(self._unix.server_address)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the model endpoint is not running")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        if self._server is None:
            tcp, unix = _server_class()
            servers = [tcp(("127.0.0.1", 0))]
            if self.socket_dir is not None:
                servers.append(unix(os.path.join(self.socket_dir, "model-endpoint.sock")))
            for server in servers:
                server.endpoint = self
                thread = threading.Thread(
                    target=server.serve_forever, name="model-endpoint", daemon=True
                )
                thread.start()
                self._threads.append(thread)
            self._server = servers[0]
            self._unix = servers[1] if len(servers) > 1 else None
        return self.url

    def stop(self) -> None:
        servers = [s for s in (self._server, self._unix) if s is not None]
        self._server = self._unix = None
        for server in servers:
            server.shutdown()
            server.server_close()
            if isinstance(server.server_address, str):
                with contextlib.suppress(OSError):
                    os.unlink(server.server_address)
        for thread in self._threads:
            thread.join(5)
        self._threads.clear()

    def __enter__(self) -> ModelEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(
        self, api: str, path: str, headers: Mapping[str, str], body: Mapping[str, Any]
    ) -> ModelCall:
        with self._lock:
            self._seq += 1
            call = parse_call(api, path, headers, body, self._seq)
            self.calls.append(call)
            if len(self.calls) > CALLS_KEPT:
                del self.calls[0]
                self.dropped += 1
        return call

    def since(self, seq: int) -> list[ModelCall]:
        """The calls after the one numbered ``seq`` (0: all kept)."""
        with self._lock:
            return [c for c in self.calls if c.seq > seq]

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._seq


def turn_call(calls: Sequence[ModelCall], marker: str) -> ModelCall | None:
    """Of ``calls``, the turn's own: the newest user message holds ``marker`` (the turn's
    prompt text), and of those the first that offers tools, else the first (a side call, a
    title say, may quote the prompt too, and offers none)."""
    mine = [c for c in calls if marker in c.user]
    with_tools = [c for c in mine if c.tools]
    chosen = with_tools or mine
    return chosen[0] if chosen else None


# ---- what a slot means -----------------------------------------------------------------------

_LINE_MIN = 16  # characters of a line worth keeping as a mark of the agent's own text


def _lines(text: str) -> list[str]:
    """The lines of ``text`` that mark it: those of at least ``_LINE_MIN`` characters, or, in
    a text that has none, every line that is not blank."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    long = [line for line in lines if len(line) >= _LINE_MIN]
    return long or lines


@dataclass
class BaseText:
    """The agent's own text, learnt from slots that carry no client text: the lines (of at
    least ``_LINE_MIN`` characters) every such slot has. A slot holds BASE where at least half
    of them are in it; its place is the first of them found."""

    lines: frozenset[str] | None = None
    samples: int = 0  # slots learnt from

    def learn(self, slot: str, client_texts: Iterable[str] = ()) -> None:
        self.samples += 1
        for t in client_texts:
            if t:
                slot = slot.replace(t, "\n")
        seen = frozenset(_lines(slot))
        self.lines = seen if self.lines is None else self.lines & seen

    @property
    def known(self) -> bool:
        """Learnt: from at least one slot (an agent whose slot was empty has no own text, and
        BASE is then never found)."""
        return self.samples > 0

    def share(self, slot: str) -> tuple[int, int]:
        """How many of the learnt lines ``slot`` holds, of how many (the evidence for BASE)."""
        lines = self.lines or frozenset()
        return sum(1 for line in lines if line in slot), len(lines)

    def place(self, slot: str) -> int | None:
        """Where BASE starts in ``slot`` (None: not there, or nothing learnt)."""
        if not self.lines:
            return None
        found = [i for line in self.lines if (i := slot.find(line)) >= 0]
        return min(found) if 2 * len(found) >= len(self.lines) else None


def symbols(slot: str, texts: Mapping[str, str], base: BaseText) -> tuple[str, ...]:
    """The slot as the model writes one: each client text (``texts``: symbol → the text sent
    for it) where it occurs, and ``BASE`` where the agent's own text is, in slot order. An
    empty text is never looked for (it cannot be told apart)."""
    found: list[tuple[int, str]] = []
    for sym, text in texts.items():
        if not text:
            continue
        start = 0
        while (i := slot.find(text, start)) >= 0:
            found.append((i, sym))
            start = i + len(text)
    at = base.place(slot)
    if at is not None:
        found.append((at, BASE))
    return tuple(sym for _, sym in sorted(found))


# ---- the calling side: what the reference agent sends in its model-endpoint mode ------------

_TOOL = {"name": "noop", "description": "does nothing", "input_schema": {"type": "object"}}


def model_request(
    api: str, system: Sequence[str], user: str, session: str
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The path, headers and body of one turn's call as an agent of ``api`` sends it: the
    slot's pieces as the API's system text (Anthropic: one text block each; Responses and Chat
    Completions: joined into one string, as agents do), the turn's prompt as the newest user
    message, the session named where the API's agents name it, one tool offered."""
    joined = "\n\n".join(system)
    if api == ANTHROPIC:
        body: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 256,
            "stream": True,
            "system": [{"type": "text", "text": p} for p in system],
            "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}],
            "metadata": {"user_id": json.dumps({"session_id": session})},
            "tools": [_TOOL],
        }
        headers = {"x-api-key": "fake", "anthropic-version": "2023-06-01"}
        return "/v1/messages", headers, body
    if api == RESPONSES:
        body = {
            "model": MODEL,
            "instructions": joined,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": user}]}],
            "stream": True,
            "prompt_cache_key": session,
            "tools": [{"type": "function", "name": "noop", "parameters": {"type": "object"}}],
        }
        return "/v1/responses", {"authorization": "Bearer fake", "session_id": session}, body
    function = {"name": "noop", "parameters": {"type": "object"}}
    body = {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "system", "content": joined}, {"role": "user", "content": user}],
        "tools": [{"type": "function", "function": function}],
    }
    return "/v1/chat/completions", {"authorization": "Bearer fake"}, body


def call_model(
    base_url: str, api: str, system: Sequence[str], user: str, session: str, timeout: float = 10
) -> int:
    """Send one turn's call (``model_request``) to the endpoint at ``base_url`` and read the
    whole answer; the HTTP status (an unreachable endpoint raises ``OSError``)."""
    import urllib.request

    path, headers, body = model_request(api, system, user, session)
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()
        return int(response.status)
