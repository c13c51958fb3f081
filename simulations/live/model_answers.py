"""What the recording model endpoint's fake model answers: one short text for every call, in
the shape of the call's API, streamed or not.

Scope
    ``answer`` is the content type and the body (one chunk, or one per event) of the answer to
    a call: a Messages ``message`` (streamed: ``message_start`` to ``message_stop``), a
    Responses ``response`` (streamed: ``response.created`` to ``response.completed``, each
    event numbered), a Chat ``chat.completion`` (streamed: its chunks, then ``[DONE]``);
    ``_sse`` writes one Server-Sent Event. The text is ``REPLY`` unless the endpoint is given
    another (``ModelEndpoint.reply``); the server (``simulations.live.endpoint``) sends it.

Abstractions
    Every answer ends the turn: the text alone (no tool call), a stop reason, a usage of one
    token in and one out; its ids are numbered by the call's ``seq`` and name ``MODEL``.

Source
    The Anthropic Messages API and the OpenAI Responses and Chat Completions APIs: their
    bodies and streaming events, as the agents' clients read them (``tests/test_endpoint.py``
    reads each the same way).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from simulations.live.model_client import ANTHROPIC, MODEL, RESPONSES

REPLY = "(fake model) ok"  # the text every call is answered with


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
