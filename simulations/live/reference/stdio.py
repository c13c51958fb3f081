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
    What the SDK's connection does not take is answered here, as JSON-RPC 2.0 says: a line
    that is not JSON, -32700 with id null; a value that is no request object, -32600; a
    batch (issue 27, kit ACP-BATCH-202..204) has its requests served in order and answered
    together in one array (``_BatchWriter``), its invalid entries answered -32600 in it, and a
    batch with no request answered with its errors alone, or not at all. Each refusal is one
    line on stderr. stdin and stdout may be pipes, sockets or a terminal (watched by asyncio)
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
from simulations.live.reference.agent import (
    OVERSIZE,
    OVERSIZE_FAULTS,
    PROG,
    STORE_FILE,
    ReferenceAgent,
    build_for,
)
from simulations.usage import UsageError
from simulations.wire.acp import INTROSPECTION_METHOD

if TYPE_CHECKING:
    from acp.connection import Connection, StreamEvent

_STDIN_LIMIT = 50 * 1024 * 1024  # bytes of one incoming line, as the SDK's own agents allow
_FILE_CHUNK = 1 << 16  # bytes read at a time from a stdin that is a file
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

    def responded(self) -> None:
        self.answered += 1
        turn = self.waiting.pop(self.answered, None)
        if turn is not None:
            turn.set()

    async def turn(self, ticket: int) -> None:
        """Wait until every request before ``ticket`` has been answered."""
        if self.answered < ticket:
            event = self.waiting[ticket] = asyncio.Event()
            await event.wait()


_UNPARSED = object()  # a line that is not JSON at all


def _message(line: bytes) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return _UNPARSED


def _refusal(message: object) -> tuple[dict[str, Any], str]:
    """JSON-RPC 2.0's answer to a line that is no request object (id null: none can be read),
    and what stderr says of it: not JSON, -32700; an empty batch or a value that is no object
    (a batch entry included), -32600."""
    if message is _UNPARSED:
        code, text = -32700, "parse error: not JSON"
    elif isinstance(message, list):
        code, text = -32600, "invalid request: an empty batch"
    else:
        code, text = -32600, "invalid request: not a JSON object"
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
    return error, text


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
                            self._writer.write(json.dumps(batch.answers).encode() + b"\n")
                        return
        self._writer.write(data)


def _key(request_id: Any) -> str:
    """A request id as a dict key that tells 1 from "1" and from true."""
    return json.dumps(request_id)


async def _pump(
    source: _Source,
    sink: asyncio.StreamReader,
    line: _Line,
    out: _Sink | _BatchWriter | None = None,
) -> None:
    """Copy stdin into the connection's reader, message by message; a line that is not a JSON
    object is reported on stderr and answered on ``out`` with JSON-RPC's error for it
    (``_refusal``). At end of input, end the connection only once every request read has been
    answered (the SDK sends nothing after it sees the end)."""
    n = 0
    while True:
        try:
            data = await source.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            data = e.partial
        except asyncio.LimitOverrunError:
            data = await source.read(_STDIN_LIMIT)  # an overlong line: reported and dropped
        if not data:
            break
        n += 1
        if not data.strip():
            continue
        message = _message(data)
        if isinstance(message, list) and message:
            _serve_batch(message, n, sink, line, out)
            continue
        if not isinstance(message, dict):
            _refuse(message, n, out)
            continue
        line.read += "method" in message and "id" in message
        sink.feed_data(data if data.endswith(b"\n") else data + b"\n")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _DRAIN_SECONDS
    while line.answered < line.read and loop.time() < deadline:
        await asyncio.sleep(0.005)
    sink.feed_eof()


def _refuse(message: object, n: int, out: _Sink | _BatchWriter | None) -> None:
    error, text = _refusal(message)
    print(f"{PROG}: stdin line {n}: {text}, answered {error['error']['code']}", file=sys.stderr)
    if out is not None:
        out.write(json.dumps(error).encode() + b"\n")


def _serve_batch(
    entries: list[Any],
    n: int,
    sink: asyncio.StreamReader,
    line: _Line,
    out: _Sink | _BatchWriter | None,
) -> None:
    """A non-empty batch, as JSON-RPC 2.0 says: each entry that is no object is answered
    -32600; requests are served in order and answered together in one array; notifications
    and responses are taken as they are and answered by nothing. A batch with no request is
    answered with its errors alone, or not at all (kit ACP-BATCH-202)."""
    calls = [e for e in entries if _entry(e)]
    errors = [_refusal(e)[0] for e in entries if not _entry(e)]
    ids = [e["id"] for e in calls if "method" in e and "id" in e]
    print(
        f"{PROG}: stdin line {n}: a batch of {len(entries)} ({len(ids)} requests, "
        f"{len(errors)} invalid)",
        file=sys.stderr,
    )
    if ids and isinstance(out, _BatchWriter):
        out.open(errors, ids)
    elif errors and out is not None:
        out.write(json.dumps(errors).encode() + b"\n")
    for entry in calls:
        line.read += "method" in entry and "id" in entry
        sink.feed_data(json.dumps(entry).encode() + b"\n")


def _entry(e: object) -> bool:
    """A batch entry the connection can take: a call with a method name, or a response."""
    if not isinstance(e, dict):
        return False
    if "method" in e:
        return isinstance(e["method"], str)
    return "id" in e and ("result" in e or "error" in e)


class _Source(Protocol):
    """What ``_pump`` reads stdin through: ``asyncio.StreamReader``, or ``_FileReader``."""

    async def readuntil(self, separator: bytes = ..., /) -> bytes: ...
    async def read(self, n: int = ..., /) -> bytes: ...


class _Sink(Protocol):
    """What the connection writes through: ``asyncio.StreamWriter``, or ``_FileWriter``."""

    def write(self, data: bytes, /) -> None: ...
    async def drain(self) -> None: ...


class _FileReader:
    """stdin that asyncio cannot watch (a regular file, ``/dev/null``), read on demand a chunk
    at a time in a worker thread, with ``asyncio.StreamReader``'s answers: ``readuntil``
    raises ``IncompleteReadError`` at the end and ``LimitOverrunError`` past ``limit`` bytes
    with no separator (the bytes stay, for ``read``). Memory: at most ``limit`` and a chunk."""

    def __init__(self, fd: int, limit: int) -> None:
        self._fd, self._limit = fd, limit
        self._buffer = bytearray()
        self._eof = False

    async def _fill(self) -> bool:
        """One more chunk into the buffer; False at the end of the file."""
        if self._eof:
            return False
        loop = asyncio.get_running_loop()
        chunk = await loop.run_in_executor(None, os.read, self._fd, _FILE_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def readuntil(self, separator: bytes = b"\n") -> bytes:
        start = 0
        while True:
            at = self._buffer.find(separator, start)
            if at >= 0:
                end = at + len(separator)
                if end > self._limit:
                    raise asyncio.LimitOverrunError("separator found past the limit", at)
                line = bytes(self._buffer[:end])
                del self._buffer[:end]
                return line
            if len(self._buffer) > self._limit:
                raise asyncio.LimitOverrunError("no separator within the limit", self._limit)
            start = max(0, len(self._buffer) - len(separator) + 1)
            if not await self._fill():
                partial = bytes(self._buffer)
                self._buffer.clear()
                raise asyncio.IncompleteReadError(partial, None)

    async def read(self, n: int = -1) -> bytes:
        if not self._buffer:
            await self._fill()
        size = len(self._buffer) if n < 0 else min(n, len(self._buffer))
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


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
            reader = asyncio.StreamReader(limit=_STDIN_LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
            stdin = reader
        else:
            stdin = _FileReader(sys.stdin.fileno(), _STDIN_LIMIT)
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
    reader = asyncio.StreamReader(limit=_STDIN_LIMIT)
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
