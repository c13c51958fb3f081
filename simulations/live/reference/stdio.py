"""The reference agent as a process: ``python -m simulations.agent``, on stdio.

Scope
    ``serve`` puts a ``ReferenceAgent`` (``simulations.live.reference.agent``) on this process's
    stdin and stdout, over the official Python SDK's low-level JSON-RPC connection
    (``acp.connection.Connection``), answering requests one at a time in the order they
    arrive (a request's notifications and response before the next one's), and when stdin
    closes, stops once every request read is answered (at most ``_DRAIN_SECONDS`` more).
    ``main`` is the command line (``parser``: the revision, a profile or a mutant, the store,
    the capabilities advertised, a model endpoint) and ``run`` the process; the module
    ``simulations.agent`` runs it under its old name, ``python -m simulations.agent``.

Abstractions
    Only what JSON-RPC 2.0 calls a request or a notification reaches the SDK's connection
    (``_take``, ``_kind``); the rest is answered here, as JSON-RPC 2.0 says, with id null
    (the id cannot be trusted): a line that is not JSON (a ``NaN`` or ``Infinity`` included),
    nested deeper than DEPTH_LIMIT (measured on the text before parsing, with no recursion:
    ``simulations.live.process.tee.too_big``) or longer than LINE_LIMIT (skipped to its
    newline a chunk at a time, never held: ``_Lines``), -32700; an invalid request (a
    ``method`` that is no string, an ``id`` that is no string, number or null, a
    ``jsonrpc`` that is not "2.0", a member given twice, no object at all), an empty batch and
    a batch of more than BATCH_LIMIT entries, -32600. A response matches no request of this
    agent (it makes none): it is ignored, never answered. A batch (issue 27, kit
    ACP-BATCH-202..204) has its requests served in order and answered together in one array
    (``_BatchWriter``), its invalid entries answered -32600 in it, and a batch with no
    request answered with its errors alone, or not at all. Each refusal is one line on
    stderr; nothing is written with a NaN (``_dumps``). At most ``_IN_FLIGHT`` requests are
    read ahead of their answers, so memory stays bounded whatever a client sends; reading
    that fails ends the input, and the end of the input ends the process (within
    ``_DRAIN_SECONDS``). stdin and stdout may be pipes, sockets or a terminal (watched by asyncio)
    or a regular file or a device such as ``/dev/null`` (``_FileReader``, ``_FileWriter``:
    read on demand in a worker thread, each answer written whole at once, so ``> answers``
    records a session); anything else (a directory) is one line and exit 2; bad arguments
    are one line naming the argument, exit 2; Ctrl-C exits 130.

    Start-up is most of what a conformance run (a process per test) pays for: the agent loads
    only the SDK's JSON-RPC layer, not its pydantic schema models (``sdk_connection``), and
    exits without the interpreter's module teardown (``run``); ``bench/agent_bench.py``.

Source
    The official Python SDK agent-client-protocol 0.12.1 (``acp.connection``: ``Connection``,
    ``StreamEvent`` observers, ``RequestError``); JSON-RPC 2.0 (parse errors, invalid
    requests, batches).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import json
import math
import os
import stat
import sys
import urllib.parse
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from simulations.live.endpoint.model_client import ANTHROPIC, APIS
from simulations.live.process.tee import read_json, too_big
from simulations.live.reference.agent import (
    OVERSIZE,
    OVERSIZE_FAULTS,
    PROG,
    STORE_FILE,
    ReferenceAgent,
    build_for,
)
from simulations.usage import UsageError, internal_error
from simulations.wire.acp import INTROSPECTION_METHOD

if TYPE_CHECKING:
    from acp.connection import Connection, StreamEvent

# what a client can send, bounded (docs/reference-agent.md, its Garbage item): past these, one error
LINE_LIMIT = 8 << 20  # bytes of one incoming line; a longer one is skipped unread, -32700
DEPTH_LIMIT = 64  # nesting of one line's JSON, measured before parsing; deeper is -32700
BATCH_LIMIT = 1_000  # entries of one batch; a longer one is one -32600
_IN_FLIGHT = 256  # requests read ahead of their answers (then stdin waits)
_CHUNK = 1 << 16  # bytes read from stdin at a time
_LOOPBACK = ("127.0.0.1", "localhost")  # the only hosts --model-endpoint may name


# ---- stdio -----------------------------------------------------------------------------------


def sdk_connection() -> ModuleType:
    """The official SDK's JSON-RPC layer, ``acp.connection`` (``Connection``, ``StreamEvent``;
    ``RequestError`` comes with it), loaded without running the package's ``__init__``.

    ``import acp`` builds every pydantic model of ``acp.schema`` (273 classes), which this
    agent never uses (they drop ``systemPrompt``): that is most of the process's start-up
    time, and a conformance run starts a process per test. ``acp.connection`` and the modules
    it imports (``_transport``, ``exceptions``, ``task``, ``telemetry``; none imports more
    later) need none of them, so they are loaded under a bare package object, and then taken
    out of ``sys.modules`` again with it: this copy is the agent's own, and a later
    ``import acp`` in the same process is an ordinary, complete import. Where ``acp`` is
    imported already, its ``acp.connection`` is returned.
    """
    if "acp" in sys.modules:
        return importlib.import_module("acp.connection")
    spec = importlib.util.find_spec("acp")
    if spec is None or not spec.submodule_search_locations:
        return importlib.import_module("acp.connection")
    before = set(sys.modules)
    bare = ModuleType("acp")
    bare.__path__ = list(spec.submodule_search_locations)
    sys.modules["acp"] = bare
    try:
        return importlib.import_module("acp.connection")
    finally:
        for name in set(sys.modules) - before:
            if name == "acp" or name.startswith("acp."):
                del sys.modules[name]


_TICKET: ContextVar[tuple[int | str | None, int]] = ContextVar("ticket", default=(None, 0))
_DRAIN_SECONDS = 10.0  # after stdin closes, how long the answers still owed may take


@dataclass
class _Line:
    """Requests in the order they arrived, answered one after the other."""

    read: int = 0  # requests read from stdin
    answered: int = 0  # responses written to stdout
    waiting: dict[int, asyncio.Event] = field(default_factory=dict)  # ticket → its turn
    progress: asyncio.Event | None = None  # set at each answer while stdin waits for room

    def responded(self) -> None:
        self.answered += 1
        turn = self.waiting.pop(self.answered, None)
        if turn is not None:
            turn.set()
        if self.progress is not None:
            self.progress.set()

    async def room(self, ahead: int) -> None:
        """Wait until fewer than ``ahead`` requests read are still unanswered."""
        while self.read - self.answered >= ahead:
            self.progress = asyncio.Event()
            await self.progress.wait()
        self.progress = None

    async def turn(self, ticket: int) -> None:
        """Wait until every request before ``ticket`` has been answered."""
        if self.answered < ticket:
            event = self.waiting[ticket] = asyncio.Event()
            await event.wait()


def _refusal(code: int, text: str) -> dict[str, Any]:
    """JSON-RPC 2.0's answer to a line (or a batch entry) that is no request it can serve:
    id null, as JSON-RPC 2.0 has it where the id cannot be read."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}


def _id_fault(request_id: object) -> str | None:
    """What makes ``request_id`` no JSON-RPC id (a string, a number, or null); None if it is
    one. A boolean is no number here, nor a NaN or an infinity (no JSON)."""
    if request_id is None or isinstance(request_id, str):
        return None
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        return None
    if isinstance(request_id, float) and math.isfinite(request_id):
        return None
    return f"id: expected a string, a number or null, got {_shown(request_id)}"


def _shown(value: object) -> str:
    """A value as a refusal names it: its JSON, cut short (a NaN as the word)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError:
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(message: object) -> tuple[str, str]:
    """What a JSON value read from stdin (or a batch entry) is: ``request``,
    ``notification``, ``response`` (to a request this agent never makes: it makes none) or
    ``invalid``, with why for the last (JSON-RPC 2.0's Request object: ``jsonrpc`` "2.0",
    ``method`` a string, ``id`` if any a string, a number or null)."""
    if not isinstance(message, dict):
        return "invalid", "not a JSON object"
    if "method" not in message:
        if "id" in message and ("result" in message or "error" in message):
            return "response", ""
        return "invalid", "neither a request, a notification nor a response"
    if not isinstance(message["method"], str):
        return "invalid", f"method: expected a string, got {_shown(message['method'])}"
    if message.get("jsonrpc") != "2.0":
        got = _shown(message["jsonrpc"]) if "jsonrpc" in message else "nothing"
        return "invalid", f'jsonrpc: expected "2.0", got {got}'
    if "id" not in message:
        return "notification", ""
    fault = _id_fault(message["id"])
    return ("invalid", fault) if fault else ("request", "")


@dataclass
class _Batch:
    """A batch of requests being served: the answers already in hand (error objects for the
    entries that are no request) and the ids still owed; written as one array when complete."""

    answers: list[dict[str, Any]]
    owed: dict[Any, int]  # request id → how many entries of the batch carry it


class _BatchWriter:
    """The connection's writer with JSON-RPC 2.0 batches (issue 27, kit ACP-BATCH-203/204):
    a response to a request that came in a batch is held until the batch's last one is ready,
    and the batch is answered with one array; everything else is written as it comes."""

    def __init__(self, writer: _Sink) -> None:
        self._writer = writer
        self.batches: list[_Batch] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def open(self, answers: list[dict[str, Any]], ids: list[Any]) -> None:
        owed: dict[Any, int] = {}
        for i in ids:
            owed[_key(i)] = owed.get(_key(i), 0) + 1
        self.batches.append(_Batch(answers, owed))

    def write(self, data: bytes) -> None:
        if self.batches:
            try:
                message = json.loads(data)
            except ValueError:
                message = None
            if isinstance(message, dict) and "method" not in message:
                key = _key(message.get("id"))
                for batch in self.batches:
                    if batch.owed.get(key, 0) > 0:
                        batch.owed[key] -= 1
                        batch.answers.append(message)
                        if not any(batch.owed.values()):
                            self.batches.remove(batch)
                            self._writer.write(_dumps(batch.answers))
                        return
        self._writer.write(data)


def _key(request_id: Any) -> str:
    """A request id as a dict key that tells 1 from "1" and from true."""
    return json.dumps(request_id)


def _dumps(value: object) -> bytes:
    """One line of JSON as this process writes it: never a NaN or an infinity (no JSON)."""
    return json.dumps(value, allow_nan=False).encode() + b"\n"


class _Lines:
    """stdin as lines of at most ``limit`` bytes, read a chunk at a time: a longer line is
    skipped to its newline as it comes, never held (its size is returned instead)."""

    def __init__(self, source: _Source, limit: int) -> None:
        self._source, self._limit = source, limit
        self._buffer = bytearray()
        self._end = False

    async def _more(self) -> bytes:
        if self._end:
            return b""
        chunk = await self._source.read(_CHUNK)
        self._end = not chunk
        return chunk

    async def next(self) -> bytes | int | None:
        """The next line (its newline left off); an int, the size of a line longer than the
        limit, skipped; None at the end of stdin."""
        start = 0
        while True:
            at = self._buffer.find(b"\n", start)
            if 0 <= at <= self._limit:
                with memoryview(self._buffer) as view:
                    line = bytes(view[:at])  # one copy, not two
                del self._buffer[: at + 1]
                return line
            if at > self._limit or len(self._buffer) > self._limit:
                return await self._skip()
            start = len(self._buffer)
            chunk = await self._more()
            if not chunk:
                line = bytes(self._buffer)
                self._buffer.clear()
                return line or None
            self._buffer += chunk

    async def _skip(self) -> int:
        at = self._buffer.find(b"\n")
        if at >= 0:
            del self._buffer[: at + 1]
            return at
        size = len(self._buffer)
        self._buffer.clear()
        while chunk := await self._more():
            at = chunk.find(b"\n")
            if at >= 0:
                self._buffer += chunk[at + 1 :]
                return size + at
            size += len(chunk)
        return size


async def _pump(
    source: _Source,
    sink: asyncio.StreamReader,
    line: _Line,
    out: _Sink | _BatchWriter | None = None,
) -> None:
    """Copy stdin into the connection's reader, message by message (``_take``); what is no
    request or notification is reported on stderr and answered on ``out`` with JSON-RPC's
    error for it. At most ``_IN_FLIGHT`` requests are read ahead of their answers. At end of
    input, end the connection once every request read has been answered, or after
    ``_DRAIN_SECONDS`` (the SDK sends nothing after it sees the end); whatever went wrong in
    reading ends the input too, never the process's liveness."""
    lines = _Lines(source, LINE_LIMIT)
    n = 0
    try:
        while (data := await lines.next()) is not None:
            n += 1
            if isinstance(data, int):
                text = f"a line of {data:,} bytes, over the limit of {LINE_LIMIT:,} (not read)"
                _refuse(-32700, f"parse error: {text}", n, out)
                continue
            if data.strip():
                await line.room(_IN_FLIGHT)
                _take(data, n, sink, line, out)
    except (OSError, ValueError, RuntimeError) as e:  # stdin itself failed: the input ends
        print(f"{PROG}: stdin: {e}; reading stops", file=sys.stderr)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _DRAIN_SECONDS
    while line.answered < line.read and loop.time() < deadline:
        await asyncio.sleep(0.005)
    sink.feed_eof()


def _take(
    data: bytes,
    n: int,
    sink: asyncio.StreamReader,
    line: _Line,
    out: _Sink | _BatchWriter | None,
) -> None:
    """One line of stdin: a request or a notification goes to the connection; a batch to
    ``_serve_batch``; a response (this agent makes no request) is ignored; anything else is
    answered -32700 (not JSON, nested deeper than DEPTH_LIMIT, a NaN or an infinity) or
    -32600 (an invalid request, a member given twice, an empty batch, a batch of more than
    BATCH_LIMIT entries)."""
    big = too_big(data, DEPTH_LIMIT, BATCH_LIMIT)
    if big is not None and big.startswith("nested"):
        _refuse(-32700, f"parse error: {big}", n, out)
        return
    if big is not None:
        _refuse(-32600, f"invalid request: a batch of {big.removeprefix('an array of ')}", n, out)
        return
    reading = read_json(data, DEPTH_LIMIT)
    message = reading.value
    if reading.problem is not None:
        _refuse(-32700, f"parse error: {reading.problem}", n, out)
        return
    if reading.nonfinite:
        fault = _id_fault(message.get("id")) if isinstance(message, dict) else None
        if fault is not None:  # the id is the NaN: the request's own fault
            _refuse(-32600, f"invalid request: {fault}", n, out)
        else:
            _refuse(-32700, "parse error: NaN, Infinity or a number out of range", n, out)
        return
    if reading.twice:
        _refuse(-32600, f"invalid request: member {reading.twice[0]!r} given twice", n, out)
        return
    if isinstance(message, list):
        if message:
            _serve_batch(message, n, sink, line, out)
        else:
            _refuse(-32600, "invalid request: an empty batch", n, out)
        return
    kind, why = _kind(message)
    if kind == "invalid":
        _refuse(-32600, f"invalid request: {why}", n, out)
    elif kind == "response":
        print(
            f"{PROG}: stdin line {n}: a response to no request of this agent, ignored",
            file=sys.stderr,
        )
    else:
        line.read += kind == "request"
        sink.feed_data(data + b"\n")


def _refuse(code: int, text: str, n: int, out: _Sink | _BatchWriter | None) -> None:
    print(f"{PROG}: stdin line {n}: {text}, answered {code}", file=sys.stderr)
    if out is not None:
        out.write(_dumps(_refusal(code, text)))


def _serve_batch(
    entries: list[Any],
    n: int,
    sink: asyncio.StreamReader,
    line: _Line,
    out: _Sink | _BatchWriter | None,
) -> None:
    """A non-empty batch, as JSON-RPC 2.0 says: each entry that is no request or
    notification is answered -32600; requests are served in order and answered together in
    one array; notifications are taken as they are, responses ignored, both answered by
    nothing. A batch with no request is answered with its errors alone, or not at all (kit
    ACP-BATCH-202)."""
    kinds = [_kind(e) for e in entries]
    errors = [
        _refusal(-32600, f"invalid request: {why}") for kind, why in kinds if kind == "invalid"
    ]
    calls = [
        e
        for e, (kind, _) in zip(entries, kinds, strict=True)
        if kind in ("request", "notification")
    ]
    ids = [e["id"] for e in calls if "id" in e]
    print(
        f"{PROG}: stdin line {n}: a batch of {len(entries)} ({len(ids)} requests, "
        f"{len(errors)} invalid)",
        file=sys.stderr,
    )
    if ids and isinstance(out, _BatchWriter):
        out.open(errors, ids)
    elif errors and out is not None:
        out.write(_dumps(errors))
    for entry in calls:
        line.read += "id" in entry
        sink.feed_data(_dumps(entry))


class _Source(Protocol):
    """What ``_pump`` reads stdin through: ``asyncio.StreamReader``, or ``_FileReader``."""

    async def read(self, n: int = ..., /) -> bytes: ...


class _Sink(Protocol):
    """What the connection writes through: ``asyncio.StreamWriter``, or ``_FileWriter``."""

    def write(self, data: bytes, /) -> None: ...
    async def drain(self) -> None: ...


class _FileReader:
    """stdin that asyncio cannot watch (a regular file, ``/dev/null``), read on demand, at
    most ``n`` bytes at a time, in a worker thread; b"" at the end."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int = -1) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, os.read, self._fd, _CHUNK if n < 0 else n)


class _FileWriter:
    """stdout that asyncio cannot watch (a regular file, ``/dev/null``): each message written
    whole as it is sent (``os.write``, no buffer of ours), so the file holds every answer by
    the time the next request is read."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None


def _watchable(name: str, mode: int, tty: bool) -> bool:
    """Can asyncio watch this stream (a pipe, a socket, a terminal)? A regular file or a
    character device is read and written directly instead; anything else is refused."""
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or tty:
        return True
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode):
        return False
    raise _NotAPipe(f"{name} is neither a pipe, a socket, a terminal nor a file")


async def _stdio() -> tuple[_Source, _Sink]:
    """stdin and stdout as the connection reads and writes them: asyncio streams over pipes,
    sockets and terminals; direct reads and writes where they are a regular file or a device
    (``python -m simulations.agent < requests.ndjson > answers.ndjson``)."""
    loop = asyncio.get_running_loop()
    stdin: _Source
    stdout: _Sink
    try:
        if _watchable("stdin", os.fstat(sys.stdin.fileno()).st_mode, sys.stdin.isatty()):
            reader = asyncio.StreamReader(limit=_CHUNK)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
            stdin = reader
        else:
            stdin = _FileReader(sys.stdin.fileno())
        if _watchable("stdout", os.fstat(sys.stdout.fileno()).st_mode, sys.stdout.isatty()):
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, sys.stdout
            )
            stdout = asyncio.StreamWriter(transport, protocol, None, loop)
        else:
            sys.stdout.flush()  # nothing of ours is buffered there: answers go by os.write
            stdout = _FileWriter(sys.stdout.fileno())
    except (ValueError, OSError) as e:
        raise _NotAPipe(f"stdin and stdout cannot be read and written: {e}") from None
    return stdin, stdout


class _NotAPipe(Exception):
    """stdin or stdout is something this process can neither watch nor read or write."""


async def serve(agent: ReferenceAgent) -> None:
    """Answer requests on stdin/stdout, one at a time in the order they arrive (a request's
    notifications and response before the next one's), until stdin closes and every request
    read is answered."""
    jsonrpc = sdk_connection()
    incoming = jsonrpc.StreamDirection.INCOMING

    class AnswerError(jsonrpc.RequestError):  # type: ignore[name-defined,misc]
        """An error response as the model shows it: no ``data`` member when there is none."""

        def to_error_obj(self) -> dict[str, Any]:
            out: dict[str, Any] = {"code": self.code, "message": str(self)}
            if self.data is not None:
                out["data"] = self.data
            return out

    stdin, stdout = await _stdio()
    writer = _BatchWriter(stdout)
    reader = asyncio.StreamReader(limit=LINE_LIMIT + 1)
    line = _Line()
    tickets = 0

    def observe(event: StreamEvent) -> None:
        # called in the receive loop just before the request's task is created, which copies
        # the context: each handler reads its own request's id and place in the line
        nonlocal tickets
        message = event.message
        if event.direction is incoming and "method" in message and "id" in message:
            _TICKET.set((message["id"], tickets))
            tickets += 1
        elif event.direction is not incoming and "method" not in message:
            line.responded()

    async def handler(method: str, params: Any, is_notification: bool) -> Any:
        if is_notification:
            return None
        msg_id, ticket = _TICKET.get()
        await line.turn(ticket)
        answer = agent.handle(msg_id, method, params)
        for update in answer.updates:
            await connection.send_notification("session/update", update)
        error = answer.error
        if error is not None:
            raise AnswerError(error["code"], error["message"], error.get("data"))
        return answer.response["result"]

    connection: Connection = jsonrpc.Connection(
        handler, writer, reader, observers=[observe], listening=False
    )
    pump = asyncio.create_task(_pump(stdin, reader, line, writer))
    try:
        await connection.main_loop()
    finally:
        pump.cancel()
        await connection.close()


# ---- command line ----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="An ACP agent on stdio whose every answer is the model's (the reference "
        "agent of a revision, or a faulty build: a profile or a mutant). It also answers the "
        f"introspection extension {INTROSPECTION_METHOD} {{sessionId}} → {{systemSlot}} "
        "(docs/reference-agent.md, 'The introspection extension'). Logs go to stderr.",
    )
    p.add_argument(
        "--revision",
        help="the revision it speaks (default: rfd-final, or the profile's or the mutant's own)",
    )
    p.add_argument(
        "--profile",
        help="a shipped profile or a .toml/.json profile file: its knobs make a faulty build",
    )
    p.add_argument("--mutant", help="a mutant of the revision's tables (see 'acp-sysprompt list')")
    p.add_argument(
        "--store",
        metavar="DIR",
        help=f"keep sessions in DIR/{STORE_FILE}, so that a new process on the same DIR is a "
        "restart (default: memory only)",
    )
    p.add_argument(
        "--model-endpoint",
        metavar="URL",
        help="send each turn to the model API at URL (http://127.0.0.1:PORT) as real agents "
        "do, its system slot as the system text (conform --model-endpoint starts one)",
    )
    p.add_argument(
        "--model-api",
        choices=APIS,
        default=ANTHROPIC,
        help="the API it speaks to --model-endpoint (default: anthropic)",
    )
    p.add_argument(
        "--model-environment",
        action="store_true",
        help="with --model-endpoint: each model call also carries an '# Environment' section "
        "(the session's working directory, the date, the platform) after its own instructions, "
        "in every mode (context from its environment: T13 lets it stay under override)",
    )
    p.add_argument(
        "--model-keeps-identity",
        action="store_true",
        help="with --model-endpoint, a faulty build: under override its model calls keep the "
        "first line of its own instructions (T13 says they must go)",
    )
    p.add_argument(
        "--oversize-fault",
        choices=OVERSIZE_FAULTS,
        help=f"a faulty build: a client prompt over {OVERSIZE} bytes makes it exit (crash), "
        "or is refused with nothing created (error: what the spec asks), or opens the session "
        "without it (drop), or both opens it and is refused (leak)",
    )
    p.add_argument(
        "--caps",
        metavar="LIST",
        help="what it advertises, a comma list: systemPrompt=none|append|override (replace "
        "too on alt-instructions) and the methods load,resume,fork,close,delete,list; what is "
        "not listed is not advertised (e.g. systemPrompt=append,load,resume). Default: the "
        "fullest profile the revision's wire (and the profile's advertises_prompt) allows",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        build = build_for(args.revision, args.profile, args.mutant, args.caps)
        store = None
        if args.store is not None:
            store = Path(args.store)
            if store.exists() and not store.is_dir():
                raise UsageError(f"argument --store: {store} is not a directory")
            store.mkdir(parents=True, exist_ok=True)
        model = None
        if args.model_endpoint is not None:
            host = urllib.parse.urlsplit(args.model_endpoint).hostname
            if not args.model_endpoint.startswith("http://") or host not in _LOOPBACK:
                raise UsageError(
                    f"argument --model-endpoint: {args.model_endpoint}: only "
                    "http://127.0.0.1:PORT (loopback) is allowed"
                )
            model = (args.model_endpoint, args.model_api)
        if model is None and (args.model_environment or args.model_keeps_identity):
            flag = "--model-environment" if args.model_environment else "--model-keeps-identity"
            raise UsageError(f"argument {flag}: only with --model-endpoint")
        agent = ReferenceAgent(
            build,
            store,
            model,
            args.model_environment,
            args.model_keeps_identity,
            args.oversize_fault,
        )
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # a fault of this agent while it starts (its store read, say)
        return internal_error()
    sessions = len(agent.world.agent.store)
    where = "memory" if store is None else f"{store} ({sessions} sessions, restarted)"
    if store is not None and not agent.restarted:
        where = f"{store} (new)"
    print(
        f"{PROG}: {build.label} advertising {build.caps.label()} on the {build.wire} wire; "
        f"store: {where}",
        file=sys.stderr,
    )
    try:
        asyncio.run(serve(agent))
    except KeyboardInterrupt:
        return 130
    except _NotAPipe as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except Exception:  # a fault of this agent, never the client's: one line, the file, 3
        return internal_error()
    return 0


def run() -> NoReturn:
    """``main`` as a process: exit without the interpreter's teardown of every imported module
    (a third of a second here, and a conformance run stops one process per test); the store
    is already on disk and the standard streams are flushed first."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # the reader has gone away
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
