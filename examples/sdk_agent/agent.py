#!/usr/bin/env python3
"""A small ACP agent, written on the official Python SDK, that takes the client's system prompt
as ACP v1 stabilised it (2026-11-06): ``systemPrompt: {mode, content}`` on session/new,
session/load, session/resume and session/fork.

    python examples/sdk_agent/agent.py --store DIR

It needs nothing but the SDK (``pip install agent-client-protocol==0.12.1``). Every session is
a JSON file in DIR, written after each change, so a new process on the same DIR is a real
restart: its sessions come back with their prompt, mode included.

What it does with the prompt:

* session/new: the system slot is our own instructions then the client's texts (``append``),
  or the client's texts alone (``override``); without a prompt, our own instructions.
* load and resume without a prompt run under the prompt the session was stored with; a fork
  without one inherits its parent's. A prompt re-sent on any of them replaces the stored one.
* a prompt it cannot use (an unknown mode, a block other than text, an empty ``content``) is
  refused with -32602, and nothing is created or re-opened.
* load replays the conversation as session/update notifications *before* it answers; resume
  replays nothing.

The SDK steps that are easy to miss are marked "SDK:" below. There is no model here: a real
agent sends the slot it composes as its model's system prompt; this one answers each turn with
a line giving that prompt's length.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import re
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from acp import RequestError, run_agent, update_agent_message_text, update_user_message_text
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    CloseSessionResponse,
    ForkSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionInfo,
)

OWN_INSTRUCTIONS = "You are example-agent. Answer briefly."
# How the introspection extension (acp-sysprompt's docs/reference-agent.md, "The introspection
# extension") names our own
# instructions in a slot; the client's texts are shown as they are.
BASE = "BASE"
SESSION_ID = r"sess-[0-9a-f]{16}"  # what new_session and fork_session hand out

# ---- reading systemPrompt -------------------------------------------------------------------
#
# SDK: the request models of agent-client-protocol 0.12.x have no systemPrompt field and drop
# unknown fields, so new_session() never sees it. An observer passed to run_agent() sees every
# raw message first: it runs in the receive loop just before the request's handler task is
# made, and that task copies the context, so a ContextVar set here holds each request's own
# params when its handler runs.

_params: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("params")


def keep_raw_params(event: StreamEvent) -> None:
    message = event.message
    if event.direction is StreamDirection.INCOMING and "method" in message:
        params = message.get("params")
        _params.set(params if isinstance(params, dict) else {})


def invalid(why: str) -> RequestError:
    return RequestError.invalid_params({"systemPrompt": why})


def prompt_of_request() -> dict[str, Any] | None:
    """The request's systemPrompt as {"mode", "texts"}, None when it carries none; -32602 for
    one we cannot apply (the spec: refuse rather than create or re-open without it)."""
    sent = (_params.get(None) or {}).get("systemPrompt")
    if sent is None:
        return None
    if not isinstance(sent, dict) or sent.get("mode") not in ("append", "override"):
        raise invalid("mode must be append or override")
    content = sent.get("content")
    if not isinstance(content, list) or not content:
        raise invalid("content must be a non-empty array of text blocks")
    if not all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        raise invalid("only text blocks are supported")
    if not all(isinstance(b.get("text"), str) for b in content):
        raise invalid("a text block needs a string text")
    return {"mode": sent["mode"], "texts": [b["text"] for b in content]}


def system_slot(prompt: dict[str, Any] | None) -> list[str]:
    """What the session's model gets as its system prompt, our instructions as BASE."""
    if prompt is None:
        return [BASE]
    if prompt["mode"] == "override":
        return list(prompt["texts"])
    return [BASE, *prompt["texts"]]


# ---- the store: one JSON file per session --------------------------------------------------


class Store:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def _file(self, sid: str) -> Path:
        return self.folder / f"{sid}.json"

    def read(self, sid: str) -> dict[str, Any]:
        """The stored session; -32002 for a session this store never had."""
        # a session id comes from the client: only one of ours may name a file
        if not re.fullmatch(SESSION_ID, sid) or not self._file(sid).is_file():
            raise RequestError.resource_not_found(sid)
        record: dict[str, Any] = json.loads(self._file(sid).read_text(encoding="utf-8"))
        return record

    def write(self, sid: str, record: dict[str, Any]) -> None:
        # write a temporary file and rename it: a crash never leaves half a session behind
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(tmp, self._file(sid))

    def ids(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json"))


# ---- the agent ------------------------------------------------------------------------------
#
# SDK: a plain class, not a subclass of acp.Agent. The Agent protocol's default methods answer
# null (session/list, extension methods) or {} (session/close) where an agent lacking the
# method should answer -32601; a plain class gets -32601 for every method it does not define.


class ExampleAgent:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.open: set[str] = set()  # sessions open on this connection (stdio: the only one)
        self.initialized = False
        self.client: Any = None

    def on_connect(self, conn: Any) -> None:
        self.client = conn  # how we send session/update

    def _ready(self) -> None:
        if not self.initialized:
            raise RequestError.invalid_request({"reason": "initialize first"})

    def _open_session(self, sid: str) -> dict[str, Any]:
        record = self.store.read(sid)
        if sid not in self.open:
            raise RequestError.invalid_request({"reason": f"session {sid} is not open"})
        return record

    async def initialize(self, protocol_version: int, **_: Any) -> dict[str, Any]:
        if self.initialized:
            raise RequestError.invalid_request({"reason": "already initialized"})
        self.initialized = True
        # SDK: answer with a plain dict. SessionCapabilities(systemPrompt=...) drops the key,
        # and a returned dict goes on the wire as it is.
        return {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "sessionCapabilities": {
                    "systemPrompt": {"mode": {"override": {}}},  # append, and override too
                    "resume": {},
                    "fork": {},
                    "close": {},
                    "list": {},
                    # no "delete": the SDK has no route for session/delete (it answers -32601),
                    # so advertising it would promise a method no request can reach
                },
            },
            "agentInfo": {"name": "example-agent", "version": "1.0"},
        }

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        self._ready()
        prompt = prompt_of_request()  # refused here, before anything is created
        sid = f"sess-{uuid.uuid4().hex[:16]}"
        self.store.write(sid, {"cwd": cwd, "prompt": prompt, "history": []})
        self.open.add(sid)
        return NewSessionResponse(session_id=sid)

    def _reopen(self, sid: str, cwd: str) -> dict[str, Any]:
        """load and resume: the stored session, under the prompt re-sent if one was, else
        the one it was stored with; open on this connection from now on."""
        self._ready()
        record = self.store.read(sid)
        resent = prompt_of_request()
        if resent is not None:
            record["prompt"] = resent
        record["cwd"] = cwd
        self.store.write(sid, record)
        self.open.add(sid)
        return record

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        record = self._reopen(session_id, cwd)
        # the whole conversation, as notifications, before the answer (a client shows it as
        # it arrives and takes the answer as "done")
        for role, text in record["history"]:
            chunk = update_user_message_text if role == "user" else update_agent_message_text
            await self.client.session_update(session_id=session_id, update=chunk(text))
        return LoadSessionResponse()

    async def resume_session(self, cwd: str, session_id: str, **_: Any) -> ResumeSessionResponse:
        self._reopen(session_id, cwd)  # no history: the client still shows it
        return ResumeSessionResponse()

    async def fork_session(self, cwd: str, session_id: str, **_: Any) -> ForkSessionResponse:
        self._ready()
        parent = self.store.read(session_id)
        resent = prompt_of_request()
        child = {
            "cwd": cwd,
            "prompt": resent if resent is not None else parent["prompt"],  # inherit the mode too
            "history": list(parent["history"]),
        }
        sid = f"sess-{uuid.uuid4().hex[:16]}"
        self.store.write(sid, child)
        self.open.add(sid)
        return ForkSessionResponse(session_id=sid)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        self._ready()
        self._open_session(session_id)
        self.open.discard(session_id)  # still on disk: a load or resume opens it again
        return CloseSessionResponse()

    async def list_sessions(self, cwd: str | None = None, **_: Any) -> ListSessionsResponse:
        self._ready()
        listed = []
        for sid in self.store.ids():
            record = self.store.read(sid)
            if cwd is None or record["cwd"] == cwd:
                listed.append(SessionInfo(session_id=sid, cwd=record["cwd"]))
        return ListSessionsResponse(sessions=listed)

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        self._ready()
        record = self._open_session(session_id)
        asked = " ".join(getattr(block, "text", "") for block in prompt)
        # the system prompt this turn's model call would carry
        slot = system_slot(record["prompt"])
        system = "\n\n".join(OWN_INSTRUCTIONS if text == BASE else text for text in slot)
        reply = f"(a model would answer here, under a system prompt of {len(system)} characters)"
        await self.client.session_update(
            session_id=session_id, update=update_agent_message_text(reply)
        )
        record["history"] += [["user", asked], ["agent", reply]]
        self.store.write(session_id, record)
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **_: Any) -> None:
        return None  # each turn ends at once: nothing to cancel

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        # acp-sysprompt's introspection extension, so `acp-sysprompt conform` can see the slot.
        # SDK: an extension method arrives without its leading "_".
        if method != "acp_sysprompt/system_slot":
            raise RequestError.method_not_found(f"_{method}")
        sid = params.get("sessionId")
        if not isinstance(sid, str) or sid not in self.open:
            return {"systemSlot": None}  # not open on this connection: no slot to show
        return {"systemSlot": system_slot(self.store.read(sid)["prompt"])}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, type=Path, help="folder of the sessions")
    args = parser.parse_args(argv)
    agent = ExampleAgent(Store(args.store))
    # SDK: use_unstable_protocol=True, or 0.12.x answers session/fork, session/resume and
    # session/close with -32601 (Method not found) while we advertise all three.
    asyncio.run(run_agent(agent, use_unstable_protocol=True, observers=[keep_raw_params]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
