"""A recording fake model API on 127.0.0.1: the server that keeps every call an agent makes
to its model.

Every ACP agent sends each turn to a model API. Pointed at this endpoint instead (a base-URL
setting: ``ANTHROPIC_BASE_URL``, a Codex provider's ``base_url``, or the reference agent's
``--model-endpoint``), the agent gets a short text back for every call, and each call is kept
as a ``ModelCall`` (``simulations.live.endpoint.model_calls``: the four APIs, streamed or not,
and what each call carries: the system slot, the turn's prompt, the tools, the session, a side
call). A POST to one of the APIs' paths is a model call; anything else (``HEAD /``, a model
list) gets an empty 200, an unknown path 404. Only loopback is bound.

The callers are agents under test, and an agent may be broken or hostile: every request it
can send gets an HTTP answer with a one-line reason, and none costs more than a bound. A
length that is not a number of bytes, a chunk size that is not hexadecimal, JSON nested past
the interpreter's recursion limit: 400; a body over ``BODY_LIMIT``: 413, refused on its
declared size, before it is read; a body that stops coming: 408; a transfer coding other than
chunked: 501. A connection waits ``READ_TIMEOUT`` at most between reads (idle between
requests too) and a body must arrive whole within it; past ``MAX_CONNECTIONS`` connections at
once a new one is answered 503 and closed, without a thread; the bodies being read at once
are ``BODIES_AT_ONCE`` bytes at most (a request waits for room, then 503), and they are parsed
one at a time, in one thread (``ModelEndpoint.take``). Of each call, the slot and the newest
user message are kept to ``model_calls.TEXT_KEPT`` characters each (head and tail), and of all
calls ``CALLS_BYTES_KEPT`` bytes (and ``CALLS_KEPT`` calls), the oldest dropped first; what was
clipped, dropped and refused is counted (``ModelEndpoint.clipped``, ``dropped``,
``dropped_since``, ``refused``), never left out silently.

This module holds the server (``ModelEndpoint``). The call as recorded (``ModelCall``,
``parse_call``, ``api_of``, ``turn_call``) is ``simulations.live.endpoint.model_calls``; what the
fake model answers, ``simulations.live.endpoint.model_answers`` (``answer``, ``REPLY``); what a
slot means, ``simulations.live.endpoint.slot_reading`` (``symbols``, ``BaseText``); the calling
side, what the reference agent sends in its model-endpoint mode,
``simulations.live.endpoint.model_client`` (``model_request``, ``call_model``, and the APIs'
names ``ANTHROPIC``, ``RESPONSES``, ``CHAT``, ``GEMINI``, ``APIS``, ``MODEL``). Each name is
imported from its own module.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from simulations.live.endpoint.model_answers import REPLY, answer
from simulations.live.endpoint.model_calls import ModelCall, api_of, parse_call

# bytes of one request body: the Anthropic Messages API's own request limit (32 MB), so that
# nothing an agent may send the real API is refused here; a turn of conform's tests is a few KB
# of messages under a slot of some ten to a hundred KB
BODY_LIMIT = 32 << 20
BODIES_AT_ONCE = 2 * BODY_LIMIT  # bytes of request bodies being read at once (two whole)
# bytes the kept calls hold: a turn is judged by the calls after its prompt was sent, the
# newest, so the oldest are dropped past it (``ModelEndpoint.dropped``); hundreds of real
# agents' calls, sixteen of the largest that can be kept (four where their texts are not ASCII)
CALLS_BYTES_KEPT = 32 << 20
CALLS_KEPT = 10_000  # calls kept, however small; the oldest dropped past it too
# seconds a connection waits at most for the next bytes, between requests too, and for a
# request's whole body: an idle or stalled connection is closed and its thread freed
READ_TIMEOUT = 30.0
KEEP_ALIVE = 5  # seconds the answers tell a client to keep an idle connection (under the above)
# connections served at once, a thread each: well above what agents run side by side open (a
# few keep-alive connections each); past it a connection is answered 503 and closed
MAX_CONNECTIONS = 256
_LINE_LIMIT = 4096  # bytes of a chunk-size or trailer line
_TRAILERS = 64  # trailer lines after a chunked body


class _Refused(Exception):
    """A request answered with an error and not recorded: its status and a one-line reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


def _shown(value: bytes | str, limit: int = 40) -> str:
    """A value a caller sent, as a reason names it: on one line, clipped."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


_DIGITS = re.compile(r"[0-9]{1,19}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_BUSY = b'{"error": "too many connections to the model endpoint at once"}'
_TURNED_AWAY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s" % (len(_BUSY), _BUSY)
)


def _server_class() -> Any:
    """The HTTP server class (``http.server`` is imported here, when an endpoint starts: the
    command line imports this module, through conform, at every start)."""
    import socketserver
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class _Handler(BaseHTTPRequestHandler):
        server: Any
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.wait: float = self.server.endpoint.read_timeout  # for each read, from here on
            self.connection.settimeout(self.wait)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the calls are the record; nothing on stderr

        def send_response(self, code: int, message: str | None = None) -> None:
            if code >= 400:
                self.server.endpoint.count_refused()
            super().send_response(code, message)

        def _empty(self, code: int, body: bytes = b"") -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(body)

        def _refuse(self, refused: _Refused) -> None:
            """Answer ``refused`` and close: what is left of the request is not read."""
            self.close_connection = True
            body = json.dumps({"error": refused.reason}).encode()
            self.send_response(refused.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def handle_expect_100(self) -> bool:
            try:  # a body it would refuse is refused before the client sends it
                self._length()
            except _Refused as refused:
                self._refuse(refused)
                return False
            return bool(super().handle_expect_100())

        def do_HEAD(self) -> None:
            self._discard_body()
            self._empty(200)

        def do_GET(self) -> None:
            self._discard_body()
            self._empty(200, b'{"data": []}')

        def _discard_body(self) -> None:
            """A GET or HEAD that says it has a body: not read, the connection closed after."""
            length = self.headers.get("Content-Length", "0").strip()
            if self.headers.get("Transfer-Encoding") or length != "0":
                self.close_connection = True

        def do_POST(self) -> None:
            endpoint = self.server.endpoint
            try:
                size = self._length()
                room = BODY_LIMIT if size is None else size
                with endpoint.reading(room, self.wait):
                    call = self._call(size)
            except _Refused as refused:
                self._refuse(refused)
                return
            except Exception as e:  # a fault of this endpoint: an answer all the same
                self._refuse(_Refused(500, f"the endpoint failed: {type(e).__name__}"))
                return
            if call is None:
                self._empty(404, b'{"error": "not a model API path"}')
                return
            kind, chunks = answer(call.api, call.stream, call.seq, endpoint.reply, call.side)
            self.send_response(200)
            self.send_header("Content-Type", kind)
            if call.stream:
                self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
            self.send_header("Keep-Alive", f"timeout={max(1, min(KEEP_ALIVE, int(self.wait)))}")
            self.end_headers()
            for c in chunks:
                self.wfile.write(c)
            self.wfile.flush()

        def _call(self, size: int | None) -> ModelCall | None:
            """Read the body, then have it parsed and recorded (None: not a model API path,
            the body read all the same). The body is read into an anonymous memory map, its
            own pages, given back whole when it is closed; it is parsed in the endpoint's one
            parsing thread (``ModelEndpoint.take``)."""
            deadline = time.monotonic() + self.wait
            with mmap.mmap(-1, max(1, BODY_LIMIT if size is None else size)) as buffer:
                if size is None:
                    length = self._chunked(buffer, deadline)
                else:
                    length = self._read(buffer, 0, size, deadline)
                self.connection.settimeout(self.wait)
                api = api_of(self.path)
                if api is None:
                    return None
                headers = {k.lower(): v for k, v in self.headers.items()}
                call: ModelCall = self.server.endpoint.take(api, self.path, headers, buffer, length)
                return call

        def _length(self) -> int | None:
            """The body's declared length (None: chunked), or why the request is refused."""
            codings = [
                c.strip().lower()
                for v in self.headers.get_all("Transfer-Encoding") or ()
                for c in v.split(",")
                if c.strip()
            ]
            lengths = {v.strip() for v in self.headers.get_all("Content-Length") or ()}
            if codings and codings != ["chunked"]:
                said = _shown(", ".join(codings))
                raise _Refused(501, f"Transfer-Encoding {said}: only chunked is read")
            if codings and lengths:
                raise _Refused(400, "both Transfer-Encoding and Content-Length")
            if codings:
                return None
            if len(lengths) > 1:
                said = ", ".join(sorted(_shown(v) for v in lengths))
                raise _Refused(400, f"Content-Length given twice, differently: {said}")
            value = lengths.pop() if lengths else "0"
            if not _DIGITS.fullmatch(value):
                raise _Refused(400, f"Content-Length {_shown(value)} is not a number of bytes")
            size = int(value)
            if size > BODY_LIMIT:
                raise _Refused(413, f"body too large: {size} bytes, over {BODY_LIMIT}")
            return size

        def _read(self, buffer: mmap.mmap, at: int, n: int, deadline: float) -> int:
            """Read the next ``n`` bytes of the request into ``buffer`` at ``at``, each read
            waiting no later than ``deadline``; where they end."""
            got = 0
            with memoryview(buffer) as whole:
                while got < n:
                    self._until(deadline)
                    with whole[at + got : at + n] as rest:
                        try:
                            k = self.rfile.readinto1(rest)
                        except TimeoutError:
                            k = None
                    if k is None:
                        raise _Refused(408, f"the body did not arrive within {self.wait:g} s")
                    if not k:
                        raise _Refused(400, f"the body ended after {got} of {n} bytes")
                    got += k
            return at + n

        def _until(self, deadline: float) -> None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Refused(408, f"the body did not arrive within {self.wait:g} s")
            self.connection.settimeout(left)

        def _line(self, deadline: float, what: str) -> bytes:
            """The next line of a chunked body, without its line end."""
            self._until(deadline)
            try:
                line = self.rfile.readline(_LINE_LIMIT)
            except TimeoutError:
                raise _Refused(408, f"the body did not arrive within {self.wait:g} s") from None
            if not line.endswith(b"\n"):
                if len(line) < _LINE_LIMIT:
                    raise _Refused(400, f"the body ended in a {what}")
                raise _Refused(400, f"a {what} over {_LINE_LIMIT} bytes")
            return line.rstrip(b"\r\n")

        def _chunked(self, buffer: mmap.mmap, deadline: float) -> int:
            """A chunked body, read whole into ``buffer``; its length. Refused on a chunk's
            size line where the chunks would be over ``BODY_LIMIT``, before that chunk is
            read."""
            length = 0
            while True:
                size = self._line(deadline, "chunk size line").split(b";", 1)[0].strip()
                if not _HEX.fullmatch(size):
                    raise _Refused(400, f"chunk size {_shown(size)} is not hexadecimal")
                n = int(size, 16)
                if n == 0:
                    break
                if length + n > BODY_LIMIT:
                    raise _Refused(413, f"body too large: chunks over {BODY_LIMIT} bytes")
                length = self._read(buffer, length, n, deadline)
                if self._line(deadline, "chunk's end"):
                    raise _Refused(400, "a chunk not followed by CRLF")
            for _ in range(_TRAILERS):  # the trailer section, up to its empty line
                if not self._line(deadline, "trailer line"):
                    return length
            raise _Refused(400, f"over {_TRAILERS} trailer lines after the chunks")

    class _Serving:
        """Both servers': a thread per connection up to the endpoint's ``max_connections``,
        another connection answered 503 and closed from the accepting thread."""

        daemon_threads = True
        request_queue_size = 128
        endpoint: ModelEndpoint

        def process_request(self, request: Any, client_address: Any) -> None:
            if not self.endpoint.admit(request):
                with contextlib.suppress(OSError):
                    request.setblocking(False)
                    request.send(_TURNED_AWAY)
                self.shutdown_request(request)  # type: ignore[attr-defined]
                return
            try:
                super().process_request(request, client_address)  # type: ignore[misc]
            except BaseException:
                self.endpoint.leave(request)  # no thread started: nothing else lets it go
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)  # type: ignore[misc]
            finally:
                self.endpoint.leave(request)

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a caller that hung up mid-answer: nothing to report, nothing on stderr

    class _Server(_Serving, ThreadingHTTPServer):
        def __init__(self, address: tuple[str, int]) -> None:
            super().__init__(address, _Handler)

    class _UnixServer(_Serving, socketserver.ThreadingUnixStreamServer):
        def __init__(self, path: str) -> None:
            super().__init__(path, _Handler)

    return _Server, _UnixServer


@dataclass
class ModelEndpoint:
    """The recording endpoint: ``start()`` gives its base URL (``http://127.0.0.1:PORT``),
    ``calls`` what came, ``stop()`` ends it (also as a context manager).

    What is kept is bounded, and what was not kept is counted: ``dropped`` calls (the oldest,
    past ``CALLS_BYTES_KEPT`` or ``CALLS_KEPT``; ``dropped_since`` says how many of those came
    after a given call), ``clipped`` calls (texts over ``model_calls.TEXT_KEPT``, kept as head
    and tail, each call's ``clipped`` how much), ``refused`` answers of 400 and over (no call
    recorded)."""

    reply: str = REPLY
    calls: list[ModelCall] = field(default_factory=list)
    dropped: int = 0  # calls no longer kept (past ``CALLS_BYTES_KEPT`` or ``CALLS_KEPT``)
    clipped: int = 0  # calls kept with a text clipped (``ModelCall.clipped``)
    refused: int = 0  # answers of 400 and over: requests (or connections) not recorded
    kept_bytes: int = 0  # what the kept calls hold (``ModelCall.held``)
    read_timeout: float = READ_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    socket_dir: str | None = None  # where to serve on a Unix socket too (``socket_path``)
    _server: Any = field(default=None, repr=False)
    _unix: Any = field(default=None, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, repr=False)
    _seq: int = 0
    _open: set[socket.socket] = field(default_factory=set, repr=False)  # connections served
    _room: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _reading: int = 0  # bytes of bodies being read or parsed (``BODIES_AT_ONCE``)
    _parser: Any = field(default=None, repr=False)  # the one thread bodies are parsed in

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model endpoint is not running")
        return int(self._server.server_address[1])

    @property
    def socket_path(self) -> str | None:
        """The Unix socket it also serves on (agents in a network namespace of their own reach
        it through ``simulations.live.process.sandbox``); None without ``socket_dir``."""
        return None if self._unix is None else str(self._unix.server_address)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the model endpoint is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        """Connections being served now (a thread each)."""
        with self._lock:
            return len(self._open)

    def start(self) -> str:
        if self._server is None:
            from concurrent.futures import ThreadPoolExecutor

            self._parser = ThreadPoolExecutor(1, thread_name_prefix="model-endpoint-parse")
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
        """Stop accepting, then end the connections still served (their threads end)."""
        servers = [s for s in (self._server, self._unix) if s is not None]
        self._server = self._unix = None
        for server in servers:
            server.shutdown()
            server.server_close()
            if isinstance(server.server_address, str):
                with contextlib.suppress(OSError):
                    os.unlink(server.server_address)
        with self._lock:
            served = list(self._open)
        for connection in served:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(5)
        self._threads.clear()
        if self._parser is not None:
            self._parser.shutdown(wait=True)
            self._parser = None

    def __enter__(self) -> ModelEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def admit(self, connection: socket.socket) -> bool:
        """Take ``connection`` to serve (False: ``max_connections`` are served already, and it
        counts as refused)."""
        with self._lock:
            if len(self._open) >= self.max_connections:
                self.refused += 1
                return False
            self._open.add(connection)
            return True

    def leave(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)

    def count_refused(self) -> None:
        with self._lock:
            self.refused += 1

    @contextlib.contextmanager
    def reading(self, size: int, wait: float) -> Iterator[None]:
        """Room for a body of ``size`` bytes to be read (and parsed), within ``BODIES_AT_ONCE``;
        a request that finds none in ``wait`` seconds is answered 503."""
        with self._room:
            if not self._room.wait_for(lambda: self._reading + size <= BODIES_AT_ONCE, wait):
                raise _Refused(503, f"over {BODIES_AT_ONCE} bytes of bodies being read at once")
            self._reading += size
        try:
            yield
        finally:
            with self._room:
                self._reading -= size
                self._room.notify_all()

    def take(
        self, api: str, path: str, headers: Mapping[str, str], raw: mmap.mmap, length: int
    ) -> ModelCall:
        """Parse the first ``length`` bytes of ``raw`` (a JSON object, UTF-8) and record the
        call, in the endpoint's parsing thread; or why it is refused (``_Refused``).

        One thread parses every body: the large objects a parse makes (the text, a slot of
        many MB) are made and freed there alone. Made in each connection's thread instead,
        glibc's malloc keeps them in that thread's arena once freed (after a large block is
        freed it serves blocks up to 32 MiB from its arenas, and gives an arena's memory back
        only from its top): 100 calls of 20 MiB over eight connections held 540 MB where
        some 180 were in use."""
        future = self._parser.submit(self._take, api, path, headers, raw, length)
        call: ModelCall = future.result()
        return call

    def _take(
        self, api: str, path: str, headers: Mapping[str, str], raw: mmap.mmap, length: int
    ) -> ModelCall:
        with memoryview(raw) as whole, whole[:length] as view:
            try:
                text = str(view, "utf-8")
            except UnicodeDecodeError:
                raise _Refused(400, "the body is not UTF-8") from None
        try:
            body = json.loads(text.removeprefix("\ufeff") or "{}")
        except RecursionError:
            raise _Refused(400, "the body's JSON is nested too deep") from None
        except ValueError:
            body = None
        del text
        if not isinstance(body, Mapping):
            raise _Refused(400, "the body is not a JSON object")
        return self.record(api, path, headers, body)

    def record(
        self, api: str, path: str, headers: Mapping[str, str], body: Mapping[str, Any]
    ) -> ModelCall:
        """Keep the call ``body`` is (``parse_call``); the oldest calls dropped past the
        bounds."""
        parsed = parse_call(api, path, headers, body)  # outside the lock: a body may be large
        with self._lock:
            self._seq += 1
            call = replace(parsed, seq=self._seq)
            self.calls.append(call)
            self.kept_bytes += call.held
            self.clipped += call.clipped > 0
            drop, freed = 0, 0
            while len(self.calls) - drop > CALLS_KEPT or self.kept_bytes - freed > CALLS_BYTES_KEPT:
                freed += self.calls[drop].held
                drop += 1
            if drop:
                del self.calls[:drop]
                self.kept_bytes -= freed
                self.dropped += drop
        return call

    def since(self, seq: int) -> list[ModelCall]:
        """The calls after the one numbered ``seq`` (0: all kept)."""
        with self._lock:
            return [c for c in self.calls if c.seq > seq]

    def dropped_since(self, seq: int) -> int:
        """How many of the calls after the one numbered ``seq`` are no longer kept (the kept
        ones are the newest, numbered on to ``last_seq``): where a turn's call is not found
        among ``since(seq)``, whether it may have come and been dropped."""
        with self._lock:
            return max(0, self._seq - len(self.calls) - seq)

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._seq
