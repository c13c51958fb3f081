"""The recording model endpoint and the agents of issue 43 (items 1 and 2): the Gemini API as
@google/gemini-cli 0.61.0 speaks it, and the side calls Chat-speaking agents send beside a turn,
each told from the turn's own call.

The request bodies are ours, written from what those agents send (the Gemini API's documented
shapes; gemini-cli's routing call asks for JSON and offers no tools, its environment context is
its first user content; opencode's title call offers no tools; qwen-code's memory extraction
after a turn has a system text of its own and 6 tools where the turn has 17; copilot's own text
differs per session): small, with none of the agents' text."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from model.types import BASE
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.endpoint.model_answers import JSON_REPLY, SIDE_COUNT, SIDE_JSON
from simulations.live.endpoint.model_calls import ModelCall, api_of, parse_call, turn_call
from simulations.live.endpoint.model_client import CHAT, GEMINI
from simulations.live.endpoint.slot_reading import BaseText, symbols

MARKER = "acp-sysprompt turn 7: answer in a word."
TEXT_A = "Client instruction A (acp-sysprompt): answer as a ship's captain would."
GEMINI_OWN = "You are an interactive command-line agent for software tasks.\nUse the tools."
ENV_CONTEXT = "This is the Gemini CLI. Today's date is a day.\nMy operating system is: linux"
TURN_PATH = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
ROUTE_PATH = "/v1beta/models/gemini-x-flash:generateContent"
COUNT_PATH = "/v1beta/models/gemini-x:countTokens"


def _declarations(n: int) -> list[dict[str, Any]]:
    return [{"name": f"tool_{k}", "parameters": {"type": "object"}} for k in range(n)]


def gemini_turn(system: str = GEMINI_OWN, prompt: str = MARKER) -> dict[str, Any]:
    """A turn as gemini-cli sends one: its environment context the first user content (with
    the model's acknowledgement after it), the prompt the newest, tools offered."""
    return {
        "contents": [
            {"role": "user", "parts": [{"text": ENV_CONTEXT}]},
            {"role": "model", "parts": [{"text": "Got it. Thanks for the context!"}]},
            {"role": "user", "parts": [{"text": prompt}]},
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": system}]},
        "tools": [{"functionDeclarations": _declarations(12)}, {"googleSearch": {}}],
        "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": True}},
    }


def gemini_route(prompt: str = MARKER) -> dict[str, Any]:
    """Its routing call: the recent history and the request, its own system text, no tools,
    JSON asked."""
    return {
        "contents": [{"role": "user", "parts": [{"text": prompt}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You route tasks. JSON only."}]},
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {"type": "object"},
        },
    }


def test_a_gemini_turn_is_read_from_its_system_instruction_alone() -> None:
    """The slot is systemInstruction's text; the environment context gemini-cli puts in its
    first user content is no part of it; the prompt is the newest user content; the tools are
    counted (twelve declarations and a search); no session is named; the streaming method is
    a stream, and nothing marks it a side call."""
    assert api_of(TURN_PATH) == api_of(ROUTE_PATH) == api_of(COUNT_PATH) == GEMINI
    assert api_of("/v1beta/models/gemini-x:embedContent") is None
    assert api_of("/v1beta/models") is None
    turn = parse_call(GEMINI, TURN_PATH, {"x-goog-api-key": "k"}, gemini_turn())
    assert turn.system == (GEMINI_OWN,) and ENV_CONTEXT not in turn.slot_text
    assert turn.user == MARKER and turn.tools == 13 and turn.session is None
    assert turn.stream and turn.side == ""
    # the REST API's snake_case spelling, a string instruction, a role left out
    snake = {
        "system_instruction": "Own text as a string.",
        "contents": [{"parts": [{"text": "a prompt"}]}],
        "tools": [{"function_declarations": _declarations(2)}],
    }
    call = parse_call(GEMINI, TURN_PATH, {}, snake)
    assert call.system == ("Own text as a string.",) and call.user == "a prompt"
    assert call.tools == 2
    # a thought part is the model's, never the slot
    thought = gemini_turn()
    thought["systemInstruction"]["parts"].append({"text": "a thought", "thought": True})
    assert parse_call(GEMINI, TURN_PATH, {}, thought).system == (GEMINI_OWN,)


def test_gemini_side_calls_are_told_apart_and_never_the_turns() -> None:
    """The routing call quotes the prompt (it is the request it routes) and the token count
    may too: each is marked a side call from the request alone, and ``turn_call`` never takes
    one — not even where the turn's own call never came."""
    route = parse_call(GEMINI, ROUTE_PATH, {}, gemini_route())
    count = parse_call(GEMINI, COUNT_PATH, {}, {"contents": gemini_turn()["contents"]})
    wrapped = parse_call(GEMINI, COUNT_PATH, {}, {"generateContentRequest": gemini_turn()})
    turn = parse_call(GEMINI, TURN_PATH, {}, gemini_turn())
    assert (route.side, route.tools, route.stream, route.user) == (SIDE_JSON, 0, False, MARKER)
    assert count.side == wrapped.side == SIDE_COUNT and wrapped.user == MARKER
    assert turn_call([route, count, turn], MARKER) is turn
    assert turn_call([route, count], MARKER) is None
    # a generateContent that asks for no JSON, or offers tools, is no routing call
    plain = parse_call(GEMINI, ROUTE_PATH, {}, gemini_route() | {"generationConfig": {}})
    tooled = parse_call(GEMINI, ROUTE_PATH, {}, gemini_route() | {"tools": gemini_turn()["tools"]})
    assert plain.side == tooled.side == ""


def _post(url: str, body: object, raw: bytes | None = None) -> tuple[int, str, bytes]:
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, "", e.read()


def _sse_data(body: bytes) -> list[Any]:
    """The ``data:`` payloads of a Server-Sent Events body, as the genai SDK reads them."""
    out = []
    for block in body.decode().split("\n\n"):
        if block.strip():
            (line,) = block.splitlines()
            assert line.startswith("data: ")
            out.append(json.loads(line.removeprefix("data: ")))
    return out


def test_the_endpoint_answers_gemini_as_gemini_cli_reads_it() -> None:
    """A turn streamed: ``data:`` chunks whose ``candidates[0].content.parts[].text`` make the
    reply, the last with ``finishReason`` STOP and ``usageMetadata``; the routing call a JSON
    object as its text (the fields gemini-cli's router and next-speaker check read); a token
    count a ``totalTokens``; a body that is not JSON, 400. Every call is recorded."""
    with ModelEndpoint(reply="hello there") as ep:
        status, kind, got = _post(ep.url + TURN_PATH, gemini_turn())
        assert status == 200 and kind == "text/event-stream"
        chunks = _sse_data(got)
        assert len(chunks) == 2
        text = "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"])
        assert text == "hello there"
        assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, "STOP"]
        assert chunks[-1]["usageMetadata"]["totalTokenCount"] == 2
        assert chunks[0]["candidates"][0]["content"]["role"] == "model"
        status, kind, got = _post(ep.url + ROUTE_PATH, gemini_route())
        assert status == 200 and kind == "application/json"
        answer = json.loads(got)["candidates"][0]
        routed = json.loads(answer["content"]["parts"][0]["text"])
        assert answer["finishReason"] == "STOP" and routed == json.loads(JSON_REPLY)
        assert routed["model_choice"] in ("flash", "pro") and routed["next_speaker"] == "user"
        assert 1 <= routed["complexity_score"] <= 100
        status, _, got = _post(ep.url + COUNT_PATH, {"contents": gemini_turn()["contents"]})
        assert status == 200 and json.loads(got) == {"totalTokens": 1}
        assert _post(ep.url + TURN_PATH, None, raw=b"\xff\xfe{")[0] == 400
        assert [(c.api, c.side) for c in ep.calls] == [
            (GEMINI, ""),
            (GEMINI, SIDE_JSON),
            (GEMINI, SIDE_COUNT),
        ]


@pytest.mark.parametrize(
    "body",
    [
        {"systemInstruction": 7, "contents": "x", "tools": {}},
        {"systemInstruction": {"parts": "no list"}, "contents": [None, 3, {"role": 5}]},
        {"systemInstruction": [{"text": 1}, "s"], "contents": {"parts": [{"text": "u"}]}},
        {"contents": [{"role": "user", "parts": [{"functionResponse": {}}]}], "tools": [1]},
        {"generationConfig": "json", "generateContentRequest": 5},
    ],
)
def test_a_hostile_gemini_body_is_read_without_a_fault(body: dict[str, Any]) -> None:
    """Whatever types a Gemini body holds, it is read (what is not text is no text)."""
    for path in (TURN_PATH, ROUTE_PATH, COUNT_PATH):
        call = parse_call(GEMINI, path, {}, body)
        assert isinstance(call, ModelCall) and call.session is None
        assert all(isinstance(p, str) for p in call.system) and isinstance(call.user, str)


# ---- Chat Completions side calls (issue 43, item 2) -------------------------------------------


def _chat(system: str, user: str, tools: int, history: bool = False) -> dict[str, Any]:
    function = {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
    messages = [{"role": "system", "content": system}]
    if history:
        messages += [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}]
    messages.append({"role": "user", "content": [{"type": "text", "text": user}]})
    body: dict[str, Any] = {"model": "m", "stream": True, "messages": messages}
    if tools:
        body["tools"] = [function] * tools
    return body


OPENCODE_OWN = "You are an agent for the terminal. Use the tools to help the user."
QWEN_OWN = "You are a command-line agent for software engineering.\nBe brief."
TITLE = "You write a title of at most fifty characters for the conversation."
MEMORY = "You extract facts worth remembering from the conversation below."


def _call(body: dict[str, Any], seq: int) -> ModelCall:
    return parse_call(CHAT, "/v1/chat/completions", {"authorization": "Bearer k"}, body, seq)


def test_opencodes_title_call_is_not_the_turn() -> None:
    """On a session's first turn opencode asks for a title: the prompt quoted, its own system
    text, no tools. The turn's call is the one with tools, whichever came first."""
    title = _call(_chat(TITLE, MARKER, 0), 1)
    turn = _call(_chat(OPENCODE_OWN, MARKER, 9), 2)
    assert title.tools == 0 and turn.tools == 9 and title.session is turn.session is None
    assert turn_call([title, turn], MARKER) is turn
    assert turn_call([turn, title], MARKER) is turn
    assert turn_call([title, turn], "acp-sysprompt turn 8: answer in a word.") is None


def test_qwen_codes_memory_extraction_is_not_the_turn() -> None:
    """After each turn qwen-code extracts memories: a system text of its own and fewer tools
    (6) than the turn (17), the conversation (the prompt too) quoted. Read as a slot it would
    hold no BASE and no client text: taking it for the turn would fail every append. The
    turn's call is the one offering the most tools, in either order of arrival."""
    turn = _call(_chat(QWEN_OWN + "\n" + TEXT_A, MARKER, 17, history=True), 1)
    memory = _call(_chat(MEMORY, f"The conversation:\nuser: {MARKER}\nassistant: ok", 6), 2)
    assert (turn.tools, memory.tools) == (17, 6) and MARKER in memory.user
    assert turn_call([turn, memory], MARKER) is turn
    assert turn_call([memory, turn], MARKER) is turn
    base = BaseText()
    base.learn(QWEN_OWN)
    chosen = turn_call([memory, turn], MARKER)
    assert chosen is not None
    assert symbols(chosen.slot_text, {"a": TEXT_A}, base) == (BASE, "a")
    assert symbols(memory.slot_text, {"a": TEXT_A}, base) == ()  # what the fault would read


def test_copilots_own_text_that_differs_per_session_is_still_found() -> None:
    """Copilot's own text differs from one session to the next (a line naming the session's
    folder): the lines learnt are those every session shares, the differing one is
    context of its section, and a third session's slot holds BASE while an override slot
    keeping only that section holds none."""
    own = (
        "You are a coding assistant in the terminal.\n"
        "Prefer small, reviewable changes over large rewrites.\n"
        "Explain each command before you run it.\n"
        "<environment_info>\n"
        "The user's current folder is {cwd}\n"
        "Session started: today, in a terminal of the user's machine\n"
        "</environment_info>"
    )
    base = BaseText()
    for cwd in ("/tmp/cwd-first01", "/tmp/cwd-first01", "/tmp/cwd-second2"):
        call = _call(_chat(own.format(cwd=cwd), MARKER, 4), 1)
        base.learn(call.system, (), cwd=cwd)
    assert not any("cwd-" in line for line in base.lines or ())
    assert base.context == {
        "<environment_info>",
        "Session started: today, in a terminal of the user's machine",
        "</environment_info>",
    }
    assert base.context_sections == ("<environment_info>",)
    third = _call(_chat(own.format(cwd="/tmp/cwd-third33") + "\n" + TEXT_A, MARKER, 4), 1)
    assert symbols(third.slot_text, {"a": TEXT_A}, base) == (BASE, "a")
    env_only = "\n".join([TEXT_A, *own.format(cwd="/tmp/cwd-x").splitlines()[3:]])
    assert symbols(env_only, {"a": TEXT_A}, base, instructions_only=True) == ("a",)
