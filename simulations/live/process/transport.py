"""One agent process on stdio, spoken to through the official ACP Python SDK, always stopped.

Scope
    ``LiveAgent`` starts an agent command as a subprocess, binds its stdin/stdout to the SDK's
    low-level ``acp.connection.Connection`` (raw dicts in, raw dicts out) and records every
    message in both directions through the connection's observers. ``request`` sends one
    JSON-RPC request and returns its raw result or error together with the notifications that
    arrived before the answer. ``restart`` stops the process and starts the same command again;
    ``stop`` closes stdin, then has the agent and every process it started stopped (SIGTERM,
    then SIGKILL), waits, and closes the pipes.

    Whatever the agent does, a request ends: an answer, or ``AgentFailure`` naming what
    happened — no answer within the per-response timeout, the process exited (a crash),
    a line on stdout that is not a JSON object, a message whose JSON-RPC envelope is broken
    (``MALFORMED``: an id that is no string or number, an error that is no object or whose
    code is no integer, both or neither of result and error, nesting past ``MAX_DEPTH``, an
    answer to an id never sent or a second answer to one), stderr past its limit (a flood),
    or stdout or stdin closed while the process runs. ``check`` raises such a failure that
    arrived after the last answer.

    The agent's own requests are answered as a client that offered no file system and no
    terminal would: ``session/request_permission`` with the outcome ``cancelled`` (no user
    was asked, nothing is allowed), every other method -32601.

Abstractions
    The SDK's own newline-delimited transport drops lines it cannot parse, and a broken
    envelope can end its receive loop; ours (``_Lines``, the SDK's message-level ``Transport``
    seam) turns the first such line into a failure, so a garbage-printing agent is named, not
    waited for. stderr is read all along (an unread pipe would block the agent); the last
    ``STDERR_TAIL`` bytes are kept for the report.

    The agent runs under a supervisor (``simulations.live.process.supervise``, a small script with
    no import of this project), in a session of its own (so it ignores the terminal's Ctrl-C),
    in the working directory and with the environment ``LiveAgent`` is given (the caller's
    environment, ``PWD`` set to that directory). The supervisor is a child subreaper: a process
    the agent starts stays its descendant even after ``setsid`` or a double fork, and when the
    agent exits or is stopped, every descendant is stopped and reaped before the supervisor
    exits — as the agent did (its exit code, or its signal), which is what ``LiveAgent``
    reports. ``pids`` are the supervisors'.

Source
    agent-client-protocol 0.12.1 (``acp.connection.Connection``, ``StreamEvent``,
    ``RequestError``); the stop ladder and report limits follow the official test kit
    (agentclientprotocol/acp-tck: close stdin, SIGTERM, SIGKILL; stderr truncated to 20 kB);
    JSON-RPC 2.0 (the envelope); the ACP schema's ``RequestPermissionOutcome`` (``cancelled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.connection import Connection, StreamDirection, StreamEvent
from acp.exceptions import RequestError

from simulations.engines.conversation import HISTORY_KINDS as HISTORY
from simulations.wire.acp import Record

STDERR_TAIL = 20 * 1024  # bytes of stderr kept for a report (the official kit keeps 20 kB)
STDERR_LIMIT = 8 * 1024 * 1024  # more than this on stderr in one test is a flood
LINE_LIMIT = 64 * 1024 * 1024  # the longest stdout line read
GRACE = 0.5  # seconds each stop stage waits for the process to exit
MAX_DEPTH = 64  # objects and arrays nested deeper than this in one message: malformed
SUPERVISOR = str(Path(__file__).with_name("supervise.py"))  # run as a file: no package import


class AgentFailure(Exception):
    """The agent did something that ends the test; the message names it. ``stderr``: what the
    agent had written on stderr by then, where the raiser kept it (its last ``STDERR_TAIL``
    bytes; None: not kept, or the agent never ran)."""

    stderr: str | None = None


class NoAnswer(AgentFailure):
    """A request got no answer within the timeout, the agent still running (liveness)."""


@dataclass
class Answer:
    """One request's answer: ``result`` or ``error`` (a JSON-RPC error object), and the
    notifications received between sending it and the answer."""

    result: Any = None
    error: dict[str, Any] | None = None
    notifications: list[dict[str, Any]] = field(default_factory=list)

    @property
    def code(self) -> int | None:
        if self.error is None:
            return None
        code = self.error.get("code")  # an integer: the transport refuses any other answer
        return code if isinstance(code, int) else 0


class _Lines:
    """The SDK's message-level transport over the process's pipes. A line that is not a JSON
    object, or a message whose JSON-RPC envelope is broken, is a failure named here: the SDK
    never sees it (it would drop the one, and the other can end its receive loop)."""

    def __init__(self, proc: asyncio.subprocess.Process, fatal: asyncio.Future[str]) -> None:
        self.proc = proc
        self.fatal = fatal
        self.sent: set[tuple[str, object]] = set()  # the ids of our requests (``_id_key``)
        self.answered: set[tuple[str, object]] = set()
        self.owed_null = 0  # answers with id null a line we sent can draw (``send_raw``)
        self.nulls: list[dict[str, Any]] = []  # those answers, kept apart from the SDK

    def _fail(self, why: str) -> None:
        if not self.fatal.done():
            self.fatal.set_result(why)

    async def send(self, message: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        if "method" in message and "id" in message:
            self.sent.add(_id_key(message["id"]))
        stdin.write((json.dumps(message) + "\n").encode())
        await stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self._fail(f"a line on stdout longer than {LINE_LIMIT} bytes")
                return None
            if not line:
                self._fail("")  # end of stdout: the caller tells a crash from a closed pipe
                return None
            if not line.strip():
                continue
            text = line[:480].decode("utf-8", "replace").strip()
            try:
                message = json.loads(line)
            except RecursionError:
                self._fail(
                    f"{MALFORMED}: JSON nested deeper than {MAX_DEPTH} levels: {text[:120]!r}"
                )
                return None
            except ValueError:
                message = None
            if not isinstance(message, dict):
                self._fail(f"non-JSON on stdout: {text[:120]!r}")
                return None
            if (
                self.owed_null
                and "method" not in message
                and message.get("id") is None
                and ("id" in message or "error" in message)  # an error with no id: the same
            ):
                self.owed_null -= 1  # the answer to a line we sent that has no id to read
                self.nulls.append(message)
                continue
            fault = self.fault(message, line)
            if fault:
                self._fail(f"{MALFORMED}: {fault}: {text[:120]!r}")
                return None
            return message

    def fault(self, m: dict[str, Any], line: bytes = b"") -> str:
        """What breaks the JSON-RPC 2.0 envelope of ``m`` (empty: nothing), as a client that
        sent ``sent`` and was answered ``answered`` reads it; an answer is recorded."""
        if _deeper_than(m, line, MAX_DEPTH):
            return f"JSON nested deeper than {MAX_DEPTH} levels"
        if "method" in m:
            if not isinstance(m["method"], str):
                return "method is not a string"
            if "id" in m and not _is_id(m["id"], null=True):
                return f"the id of a request, {m['id']!r}, is neither a string, a number nor null"
            if "params" in m and not isinstance(m["params"], dict | list):
                return "params is neither an object nor an array"
            return ""
        if "id" not in m:
            return "neither a request, a notification nor an answer (no method, no id)"
        mid = m["id"]
        if mid is None:
            return "an answer with id null (the agent could not read a request)"
        if not _is_id(mid):
            return f"the id {mid!r} of an answer is neither a string nor a number"
        if ("result" in m) == ("error" in m):
            both = "result" in m
            return f"an answer with {'both result and' if both else 'neither result nor'} error"
        if "error" in m:
            error = m["error"]
            if not isinstance(error, dict):
                return f"error is not an object: {error!r}"[:200]
            code = error.get("code")
            if not isinstance(code, int) or isinstance(code, bool):
                return f"error.code {code!r} is not an integer"[:200]
            if not isinstance(error.get("message"), str):
                return "error.message is not a string"
        key = _id_key(mid)
        if key not in self.sent:
            return f"an answer to id {mid!r}, which was never sent"
        if key in self.answered:
            return f"id {mid!r} answered twice"
        self.answered.add(key)
        return ""

    async def close(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(Exception):
                stdin.close()


MALFORMED = "a malformed JSON-RPC message on stdout"  # how a broken envelope is named


def _is_id(value: object, *, null: bool = False) -> bool:
    if value is None:
        return null
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _id_key(value: object) -> tuple[str, object]:
    """An id as JSON tells it apart: the number 1 and the string "1" are two ids."""
    return ("s", value) if isinstance(value, str) else ("n", value)


def _deeper_than(value: object, line: bytes, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` deep (a line with fewer
    brackets than that cannot)."""
    if line and line.count(b"[") + line.count(b"{") <= limit:
        return False
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(v, dict):
            stack += [(x, depth + 1) for x in v.values() if isinstance(x, dict | list)]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v if isinstance(x, dict | list)]
    return False


async def _answer_agent(method: str, params: Any, is_notification: bool) -> Any:
    """A request from the agent, answered as a client that offered nothing but a user would:
    ``session/request_permission`` gets the outcome ``cancelled`` (no one was asked: nothing
    is allowed), and everything else — files, terminals, any method this client did not
    offer in its capabilities — -32601. Notifications need no answer."""
    if is_notification:
        return None
    if method == "session/request_permission":
        if not (
            isinstance(params, dict)
            and isinstance(params.get("sessionId"), str)
            and isinstance(params.get("toolCall"), dict)
            and isinstance(params.get("options"), list)
        ):
            raise RequestError.invalid_params(
                {"details": "expected sessionId, toolCall and options"}
            )
        return {"outcome": {"outcome": "cancelled"}}
    raise RequestError.method_not_found(method)


async def _reap(fut: asyncio.Future[Any]) -> None:
    """Wait for ``fut``, which was just cancelled, whatever it ends with — yet let a
    cancellation of the waiting task itself through (Ctrl-C or SIGTERM cancel the run's main
    task; swallowing that here would let the run go on as if nothing had been asked)."""
    try:
        await fut
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if me is not None and me.cancelling():
            raise
    except BaseException:  # the cancelled future's own end is of no interest
        pass


SUPERVISOR_GRACE = 2.0  # seconds past its own ladder a supervisor may take to exit


async def _wait(proc: asyncio.subprocess.Process, seconds: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), seconds)


def executable(command: str) -> str:
    """``command`` as the supervisor will start it, checked first (so that an agent that
    cannot be started is named at once): a path with a ``/`` made absolute (the agent runs in
    another directory), a bare name looked up on ``PATH``."""
    if os.sep not in command:
        if shutil.which(command) is None:
            raise AgentFailure(f"cannot start the agent {command!r}: not found on PATH")
        return command
    path = os.path.abspath(command)
    if not os.path.isfile(path):
        raise AgentFailure(f"cannot start the agent {command!r}: No such file or directory")
    if not os.access(path, os.X_OK):
        raise AgentFailure(f"cannot start the agent {command!r}: Permission denied")
    return path


class LiveAgent:
    """An agent command on stdio; ``log`` holds every message of every process it started."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 10.0,
        stderr_limit: int = STDERR_LIMIT,
        cwd: str | None = None,
    ) -> None:
        if not argv:
            raise ValueError("argv: an agent command is needed")
        self.argv = list(argv)
        self.timeout = timeout
        self.stderr_limit = stderr_limit
        self.cwd = cwd
        self.log: list[Record] = []
        self.stderr = bytearray()  # the last STDERR_TAIL bytes, over every process
        self.stderr_bytes = 0  # stderr bytes of the current process
        self.pids: list[int] = []  # every process started (for the leak checks of the tests)
        self.starts = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._conn: Connection | None = None
        self._fatal: asyncio.Future[str] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._lines: _Lines | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None

    async def start(self) -> None:
        if self._proc is not None:
            return
        argv = [executable(self.argv[0]), *self.argv[1:]]
        env = None if self.cwd is None else {**os.environ, "PWD": self.cwd}
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                SUPERVISOR,
                str(os.getpid()),
                "--",
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                limit=LINE_LIMIT,
                start_new_session=True,
            )
        except OSError as e:
            raise AgentFailure(f"cannot start the agent {self.argv[0]!r}: {e.strerror}") from None
        self._proc = proc
        self.pids.append(proc.pid)
        self.starts += 1
        self.stderr_bytes = 0
        fatal: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._fatal = fatal
        epoch = self.starts - 1

        def observe(event: StreamEvent) -> None:
            way = "send" if event.direction is StreamDirection.OUTGOING else "recv"
            self.log.append(Record(way, event.message, epoch))

        self._lines = _Lines(proc, fatal)
        self._conn = Connection(_answer_agent, self._lines, observers=[observe])
        self._stderr_task = asyncio.create_task(self._read_stderr(proc, fatal))

    async def _read_stderr(
        self, proc: asyncio.subprocess.Process, fatal: asyncio.Future[str]
    ) -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            self.stderr_bytes += len(chunk)
            self.stderr += chunk
            del self.stderr[:-STDERR_TAIL]
            if self.stderr_bytes > self.stderr_limit and not fatal.done():
                fatal.set_result(f"stderr flood: more than {self.stderr_limit} bytes")

    async def _why(self, told: str) -> str:
        """Name what ended the conversation: ``told`` by the transport, else exit or EOF."""
        if told:
            return told
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), GRACE)
            if proc.returncode is not None:
                return f"the agent exited with code {proc.returncode} (crash)"
        return "the agent closed its stdout (pipe closed) while still running"

    async def request(self, method: str, params: dict[str, Any]) -> Answer:
        """Send ``method`` and wait for its answer (at most ``timeout`` seconds)."""
        if self._conn is None or self._fatal is None:
            raise AgentFailure(f"{method}: the agent is not running")
        fatal = self._fatal
        if fatal.done():
            raise AgentFailure(await self._why(fatal.result()))
        before = len(self.log)
        send = asyncio.ensure_future(self._conn.send_request(method, params))
        try:
            done, _ = await asyncio.wait(
                {send, fatal}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:
            send.cancel()
            raise
        if send not in done:
            send.cancel()
            await _reap(send)
            if fatal in done:
                raise AgentFailure(await self._why(fatal.result()))
            raise NoAnswer(f"no answer to {method} within {self.timeout:g} s (timeout)")
        notes = []
        for r in self.log[before:]:
            if r.direction != "recv":
                continue
            m = r.message
            if "method" not in m and ("result" in m or "error" in m):
                # the answer (one request is open at a time): what came after it was read
                # with it, yet belongs to no part of this request
                break
            if "id" not in r.message:
                notes.append(r.message)
        try:
            return Answer(result=send.result(), notifications=notes)
        except RequestError as e:
            error: dict[str, Any] = {"code": e.code, "message": str(e)}
            if e.data is not None:
                error["data"] = e.data
            return Answer(error=error, notifications=notes)
        except (ConnectionError, OSError):
            if not fatal.done():  # stdout still open: the write failed
                why = await self._why("")
                if "(crash)" not in why:
                    why = "the agent closed its stdin (pipe closed) while still running"
                raise AgentFailure(why) from None
            raise AgentFailure(await self._why(fatal.result())) from None

    async def send_raw(self, data: bytes) -> None:
        """Write ``data`` (a line that is no request: not JSON, say) as it is; one answer with
        id null, JSON-RPC's answer to it, is then taken and kept in ``null_answers`` instead of
        failing the transport."""
        proc, lines = self._proc, self._lines
        if proc is None or proc.stdin is None or lines is None:
            raise AgentFailure("the agent is not running")
        lines.owed_null += 1
        try:
            proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, OSError):
            raise AgentFailure(await self._why("")) from None

    @property
    def null_answers(self) -> list[dict[str, Any]]:
        return [] if self._lines is None else self._lines.nulls

    def check(self) -> None:
        """Raise ``AgentFailure`` if the transport has named a fault since the last answer (a
        malformed message, an answer to no request, a flood): a test does not end as passed
        with one unread."""
        fatal = self._fatal
        if fatal is not None and fatal.done() and fatal.result():
            raise AgentFailure(fatal.result())

    async def stop(self) -> None:
        """Close stdin; then SIGTERM to the supervisor, which stops the agent and every
        descendant it left (SIGTERM, then SIGKILL: ``simulations.live.process.supervise``); wait for
        it, and close the pipes (nothing of this process outlives the event loop)."""
        proc, conn, task = self._proc, self._conn, self._stderr_task
        self._proc = self._conn = self._fatal = self._stderr_task = None
        if proc is None:
            return
        try:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.close(), GRACE)
            await _wait(proc, GRACE)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(proc.pid, signal.SIGTERM)
                await _wait(proc, 2 * GRACE + SUPERVISOR_GRACE)
            if proc.returncode is None:  # the supervisor itself is stuck: its group goes
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        finally:
            if proc.returncode is None:  # cancelled on the way: the supervisor cleans up alone
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(proc.pid, signal.SIGTERM)
            transport = getattr(proc, "_transport", None)
            if transport is not None:  # a pipe a stray process still holds is closed here
                transport.close()
            if task is not None:
                task.cancel()
                await _reap(task)

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def history_updates(notes: Sequence[dict[str, Any]], session_id: str) -> int:
    """How many of ``notes`` are session/update notifications carrying history of the session."""
    n = 0
    for m in notes:
        params = m.get("params")
        if m.get("method") != "session/update" or not isinstance(params, dict):
            continue
        update = params.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        if params.get("sessionId") == session_id and kind in HISTORY:
            n += 1
    return n
