"""What a model call carries, as the recording model endpoint keeps it: per API, the system
slot, the turn's prompt, the tools offered and the session named.

Scope
    ``parse_call`` reads one request body of a model API (``api_of`` tells which API a POST
    path speaks) as a ``ModelCall``: which API, the system slot's text pieces in order, the
    newest user message (the turn's prompt), the texts of every user-role message
    (``outside``: where a client text that missed the slot went), how many tools it offers,
    the ACP session it names where the request carries one, and whether the request shows
    itself a side call (``side``). ``turn_call`` picks a turn's own call among those kept.
    The server that receives the calls and keeps them is
    ``simulations.live.endpoint.endpoint``; what a slot means is read by
    ``simulations.live.endpoint.slot_reading`` (``symbols``: the client's texts by
    containment and order, the agent's own text by the lines it shares with the slots of
    sessions the client gave no prompt; never by equality of the whole slot, since real
    slots carry per-request header lines and identity lines).

Abstractions
    Four APIs, streamed (Server-Sent Events) or not, as the agents call them:

    * Anthropic Messages, ``POST …/messages``: the slot is the top-level ``system`` (a string
      or text blocks) and any ``role: "system"`` item of ``messages``; the session is
      ``metadata.user_id`` (a JSON string with ``session_id``, or an id ending
      ``session_<uuid>``) or the ``x-claude-code-session-id`` header;
    * OpenAI Responses, ``POST …/responses``: ``instructions`` and the ``developer`` and
      ``system`` items of ``input``; the session is the ``session_id`` or ``conversation_id``
      header, else ``prompt_cache_key``;
    * OpenAI Chat Completions, ``POST …/chat/completions``: the ``system`` and ``developer``
      messages;
    * the Gemini API as @google/gemini-cli calls it,
      ``POST …/models/MODEL:streamGenerateContent`` (``?alt=sse``: a turn) and
      ``…:generateContent``: the slot is ``systemInstruction`` alone (its ``parts[].text``;
      gemini-cli puts its environment context in the first user content, which is no part of
      the slot), the prompt the newest ``contents[]`` item of role ``user``; no session is
      named. ``…:countTokens`` is a side call (``SIDE_COUNT``), and so is a
      ``generateContent`` that offers no tools and asks for JSON
      (``generationConfig.responseMimeType`` ``application/json``: gemini-cli's routing and
      next-speaker checks; ``SIDE_JSON``).

    Where a request names no session (Chat Completions, Gemini), a call is the turn's by its
    prompt: conform sends each turn's prompt as a numbered marker, and ``turn_call`` takes the
    call whose newest user message holds it, never a side call, and of several the one
    offering the most tools (a title call offers none; a memory extraction after the turn,
    fewer than the turn).

    Of each call, the slot, the newest user message and the user-role texts are kept to
    ``TEXT_KEPT`` characters each (head and tail), the session to ``SESSION_KEPT``; what
    was left out is counted (``ModelCall.clipped``; ``slot_clipped``, a slot whose middle is
    not seen and so is not judged), never left out silently. ``ModelCall.held`` is the bytes
    a kept call holds, which the server bounds over all calls.

Source
    The request bodies of the Anthropic Messages API, the OpenAI Responses and Chat
    Completions APIs and the Gemini API (``generateContent``, ``streamGenerateContent?alt=sse``,
    ``countTokens``), as the agents under test send them;
    ``simulations.live.endpoint.model_client`` writes each the same way, for the reference
    agent.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulations.live.endpoint.model_answers import SIDE_COUNT, SIDE_JSON
from simulations.live.endpoint.model_client import ANTHROPIC, CHAT, GEMINI, RESPONSES

# characters kept of a call's slot, and of its newest user message (the prompt, with what the
# agent puts beside it): real agents' slots (Claude Code's, Codex's base prompts) are tens of
# KB, ten times and more under this; past it the head and the tail are kept
TEXT_KEPT = 1 << 20
SESSION_KEPT = 1024  # characters kept of the session a call names (ids are some 40)
_CALL_BYTES = 512  # what a kept call holds besides its texts (the object, its fields)
_SESSION_IN_ID = re.compile(r"session_([0-9A-Za-z-]{8,})")
# a Gemini API method: POST …/models/MODEL:METHOD (the model's name may hold no slash)
_GEMINI_PATH = re.compile(r"/models/[^/:]+:(streamGenerateContent|generateContent|countTokens)$")


@dataclass(frozen=True)
class ModelCall:
    """One call the agent made to its model."""

    api: str
    path: str
    system: tuple[str, ...]  # the system slot's text pieces, in the order the request has them
    user: str  # the newest user message's text ("" where it has none)
    # how many tools the call offers (0: none): a turn's own call offers the agent's tools;
    # side calls offer none (a title) or fewer (a memory extraction after the turn)
    tools: int
    session: str | None  # the ACP session the request names, where it names one
    stream: bool
    seq: int  # 1, 2, … in arrival order
    at: float = 0.0  # time.monotonic() at arrival
    clipped: int = 0  # characters left out of the slot, the user message and the session
    slot_clipped: int = 0  # of those, the slot's: its middle is not seen, so it is not judged
    # what the request shows itself to be besides a turn ("": nothing; ``SIDE_COUNT``, a
    # token count; ``SIDE_JSON``, a tool-less call asking for JSON): never a turn's call
    side: str = ""
    # the texts of every user-role message, joined (the turn's prompt and what the agent puts
    # beside it: a ``<system-reminder>``, its environment): where a client text went that
    # missed the system slot
    outside: str = ""

    @property
    def slot_text(self) -> str:
        return "\n".join(self.system)

    @property
    def held(self) -> int:
        """Bytes the call holds, kept: its texts as Python holds them, and the call itself."""
        texts = (*self.system, self.user, self.outside, self.path, self.session or "")
        return _CALL_BYTES + sys.getsizeof(self.system) + sum(sys.getsizeof(t) for t in texts)


def _clip(text: str, limit: int = TEXT_KEPT) -> tuple[str, int]:
    """``text`` kept to ``limit`` characters: its head and its tail, a line break between them
    (a client's text stands at the start of a slot or at its end); and how many were left
    out."""
    if len(text) <= limit:
        return text, 0
    half = limit // 2
    return text[:half] + "\n" + text[len(text) - (limit - half) :], len(text) - limit


def api_of(path: str) -> str | None:
    """The API a POST to ``path`` speaks (None: not a model call)."""
    bare = path.split("?", 1)[0].rstrip("/")
    if _GEMINI_PATH.search(bare):
        return GEMINI
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


def _parts(content: object) -> list[str]:
    """The texts of a Gemini content: a string, a ``Content`` (``parts[].text``) or a list of
    parts; thoughts left out."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, Mapping):
        content = content.get("parts")
    if not isinstance(content, list):
        return []
    return [
        p["text"]
        for p in content
        if isinstance(p, Mapping)
        and isinstance(p.get("text"), str)
        and p.get("thought") is not True
    ]


def _gemini_user(contents: object) -> str:
    """The newest ``contents[]`` item of role ``user`` (a role left out is the user's), as
    text."""
    if isinstance(contents, Mapping | str):
        contents = [contents]
    if not isinstance(contents, list):
        return ""
    for item in reversed(contents):
        if isinstance(item, str):
            return item
        if isinstance(item, Mapping) and item.get("role", "user") == "user":
            return "\n".join(_parts(item))
    return ""


def _tool_count(api: str, tools: object) -> int:
    """How many tools a request offers: the entries of ``tools``; in the Gemini API each
    ``functionDeclarations`` entry of a tool (a tool without them, a search say, is one)."""
    if not isinstance(tools, list):
        return 0
    if api != GEMINI:
        return len(tools)
    count = 0
    for tool in tools:
        declared = (
            tool.get("functionDeclarations", tool.get("function_declarations"))
            if isinstance(tool, Mapping)
            else None
        )
        count += len(declared) if isinstance(declared, list) else 1
    return count


def _gemini_side(method: str, tools: int, body: Mapping[str, Any]) -> str:
    """What a Gemini API call shows itself to be besides a turn: a token count, or a
    ``generateContent`` offering no tools that asks for JSON back (``SIDE_JSON``); else ""."""
    if method == "countTokens":
        return SIDE_COUNT
    config = body.get("generationConfig", body.get("generation_config"))
    mime = (
        config.get("responseMimeType", config.get("response_mime_type"))
        if isinstance(config, Mapping)
        else None
    )
    if method == "generateContent" and not tools and mime == "application/json":
        return SIDE_JSON
    return ""


def _all_user(items: object) -> list[str]:
    """The texts of every item of role ``user`` (a list of messages or input items)."""
    if not isinstance(items, list):
        return []
    return [
        t
        for item in items
        if isinstance(item, Mapping) and item.get("role") == "user"
        for t in _texts(item.get("content"))
    ]


def _gemini_all_user(contents: object) -> list[str]:
    """The texts of every ``contents[]`` item of role ``user`` (a role left out is the
    user's)."""
    if isinstance(contents, Mapping | str):
        contents = [contents]
    if not isinstance(contents, list):
        return []
    out: list[str] = []
    for item in contents:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping) and item.get("role", "user") == "user":
            out += _parts(item)
    return out


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
    tools = _tool_count(api, body.get("tools"))
    stream, side = body.get("stream") is True, ""
    if api == GEMINI:
        found = _GEMINI_PATH.search(path.split("?", 1)[0].rstrip("/"))
        method = found.group(1) if found else ""
        instruction = body.get("systemInstruction", body.get("system_instruction"))
        system += _parts(instruction)
        contents = body.get("contents")
        request = body.get("generateContentRequest")  # countTokens may wrap a whole request
        if contents is None and isinstance(request, Mapping):
            contents = request.get("contents")
        user = _gemini_user(contents)
        outside = _gemini_all_user(contents)
        stream, side = method == "streamGenerateContent", _gemini_side(method, tools, body)
    elif api == ANTHROPIC:
        system += _texts(body.get("system"))
        messages = body.get("messages")
        for m in messages if isinstance(messages, list) else ():
            if isinstance(m, Mapping) and m.get("role") == "system":
                system += _texts(m.get("content"))
        user, outside = _last_user(messages), _all_user(messages)
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
        user, outside = _last_user(items), _all_user(items)
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
        user, outside = _last_user(messages), _all_user(messages)
    pieces, slot_clipped = tuple(system), 0
    if sum(len(p) for p in pieces) + len(pieces) - 1 > TEXT_KEPT:
        slot, slot_clipped = _clip("\n".join(pieces), TEXT_KEPT)
        half = TEXT_KEPT // 2
        pieces = (slot[:half], slot[half + 1 :])  # its head and its tail: ``slot_text`` is slot
    user, user_clipped = _clip(user)
    # the user-role messages, the last one included: a second view of what ``user`` counts
    others, _ = _clip("\n".join(outside))
    clipped = slot_clipped
    if session is not None:
        session, session_clipped = _clip(session, SESSION_KEPT)
        clipped += session_clipped
    return ModelCall(
        api=api,
        path=path,
        system=pieces,
        user=user,
        tools=tools,
        session=session,
        stream=stream,
        seq=seq,
        at=time.monotonic(),
        clipped=clipped + user_clipped,
        slot_clipped=slot_clipped,
        side=side,
        outside=others,
    )


def turn_call(calls: Sequence[ModelCall], marker: str) -> ModelCall | None:
    """Of ``calls``, the turn's own: the newest user message holds ``marker`` (the turn's
    prompt text), the request shows itself no side call (``side``: a token count, a routing
    call asking for JSON), and of those the first that offers the most tools (a side call may
    quote the prompt too: a title call offers no tool, a memory extraction after the turn
    fewer than the turn, and either may arrive first)."""
    mine = [c for c in calls if marker in c.user and not c.side]
    if not mine:
        return None
    most = max(c.tools for c in mine)
    return next(c for c in mine if c.tools == most)
