"""The calling side of the recording model endpoint: what the reference agent sends, in its
model-endpoint mode, to a model API of each kind.

Scope
    ``model_request`` is one turn's call as an agent of an API sends it (its path, headers and
    body): the slot's pieces as the API's system text, the turn's prompt as the newest user
    message, the session named where that API's agents name it, one tool offered;
    ``call_model`` sends it to an endpoint and reads the whole answer. The APIs' names
    (``ANTHROPIC``, ``RESPONSES``, ``CHAT``, ``GEMINI``; ``APIS``) and the model a call names
    (``MODEL``)
    are kept here, the lowest of the endpoint's modules, which the others import
    (``model_calls``, ``model_answers``): the reference agent's process imports this module at
    every start, and neither the server nor the answers.

Abstractions
    A call is one POST of a JSON object, streamed as agents call (``"stream": true``; the
    Gemini API's streaming method, with Server-Sent Events), with a fake key;
    ``urllib.request`` is imported when a call is sent, not with the module. An unreachable
    endpoint raises ``OSError``; any answer is read whole and its status returned.

Source
    The request shapes of the Anthropic Messages API, the OpenAI Responses and Chat
    Completions APIs and the Gemini API (``streamGenerateContent`` with ``alt=sse``, as
    @google/gemini-cli calls it), as ``simulations.live.endpoint.model_calls``
    (``parse_call``) reads them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

ANTHROPIC, RESPONSES, CHAT, GEMINI = "anthropic", "responses", "chat", "gemini"
APIS = (ANTHROPIC, RESPONSES, CHAT, GEMINI)
MODEL = "fake-model"

_TOOL = {"name": "noop", "description": "does nothing", "input_schema": {"type": "object"}}


def model_request(
    api: str, system: Sequence[str], user: str, session: str
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The path, headers and body of one turn's call as an agent of ``api`` sends it: the
    slot's pieces as the API's system text (Anthropic: one text block each, Gemini: one part
    each; Responses and Chat Completions: joined into one string, as agents do), the turn's
    prompt as the newest user message, the session named where the API's agents name it (the
    Gemini API's do not), one tool offered."""
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
    if api == GEMINI:
        declaration = {"name": "noop", "description": "does nothing", "parameters": {}}
        body = {
            "contents": [{"role": "user", "parts": [{"text": user}]}],
            "systemInstruction": {"role": "user", "parts": [{"text": p} for p in system]},
            "tools": [{"functionDeclarations": [declaration]}],
            "generationConfig": {"temperature": 0},
        }
        path = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
        return path, {"x-goog-api-key": "fake"}, body
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
