"""What the recording model endpoint's fake model answers: one short text for every call, in
the shape of the call's API, streamed or not.

Scope
    ``answer`` is the content type and the body (one chunk, or one per event) of the answer to
    a call: a Messages ``message`` (streamed: ``message_start`` to ``message_stop``), a
    Responses ``response`` (streamed: ``response.created`` to ``response.completed``, each
    event numbered), a Chat ``chat.completion`` (streamed: its chunks, then ``[DONE]``), a
    Gemini ``GenerateContentResponse`` (streamed: two ``data:`` chunks, the second with the
    ``finishReason`` and ``usageMetadata``); a Gemini side call gets its own answer: a token
    count (``SIDE_COUNT``: ``totalTokens``) or, where it asked for JSON (``SIDE_JSON``),
    ``JSON_REPLY`` as its text. ``_sse`` writes one Server-Sent Event. The text is ``REPLY``
    unless the endpoint is given another (``ModelEndpoint.reply``); the server
    (``simulations.live.endpoint.endpoint``) sends it.

Abstractions
    Every answer ends the turn: the text alone (no tool call), a stop reason, a usage of one
    token in and one out; its ids are numbered by the call's ``seq`` and name ``MODEL``.

Source
    The Anthropic Messages API, the OpenAI Responses and Chat Completions APIs and the Gemini
    API (``generateContent``, ``streamGenerateContent?alt=sse``, ``countTokens``): their
    bodies and streaming events, as the agents' clients read them (``tests/test_endpoint.py``
    reads each the same way). ``JSON_REPLY`` holds what gemini-cli's routing call
    (``reasoning``, ``model_choice``; or ``complexity_reasoning``, ``complexity_score``) and
    its next-speaker check (``next_speaker``) look for, so that either goes on to the turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from simulations.live.endpoint.model_client import ANTHROPIC, GEMINI, MODEL, RESPONSES

REPLY = "(fake model) ok"  # the text every call is answered with
# the text a side call that asks for JSON gets: one small object with the fields gemini-cli's
# routing and next-speaker checks read (the simple model; the user speaks next)
JSON_REPLY = json.dumps(
    {
        "reasoning": "fake model",
        "model_choice": "flash",
        "complexity_reasoning": "fake model",
        "complexity_score": 1,
        "next_speaker": "user",
    }
)
SIDE_COUNT = "count tokens"  # a call counting tokens (Gemini ``countTokens``)
SIDE_JSON = "JSON asked, no tools"  # a utility call that wants JSON text back (routing)


def _sse(event: str | None, data: Mapping[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def answer(
    api: str, stream: bool, seq: int, text: str = REPLY, side: str = ""
) -> tuple[str, list[bytes]]:
    """The content type and the body (one chunk, or one per event) of the answer to a call
    (``side``: what the call showed itself to be besides a turn, ``ModelCall.side``)."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    if api == GEMINI:
        return _gemini(stream, seq, text, side)
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


def _gemini(stream: bool, seq: int, text: str, side: str) -> tuple[str, list[bytes]]:
    """A Gemini API answer: a token count, or the text (``JSON_REPLY`` where JSON was asked)
    as ``candidates[0].content.parts[0].text`` with ``finishReason`` and ``usageMetadata``;
    streamed, the text in two ``data:`` chunks, the second closing."""
    if side == SIDE_COUNT:
        return "application/json", [json.dumps({"totalTokens": 1}).encode()]
    text = JSON_REPLY if side == SIDE_JSON else text
    usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}

    def response(part: str, finish: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": part}]}}
        candidate["index"] = 0
        if finish:
            candidate["finishReason"] = "STOP"
        body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
        body["responseId"] = f"fake-{seq}"
        if finish:
            body["usageMetadata"] = usage
        return body

    if not stream:
        return "application/json", [json.dumps(response(text, True)).encode()]
    half = len(text) // 2  # a text part is never empty: gemini-cli takes one for a broken chunk
    parts = [text[:half], text[half:]] if half else [text]
    return "text/event-stream", [
        _sse(None, response(p, n == len(parts) - 1)) for n, p in enumerate(parts)
    ]
