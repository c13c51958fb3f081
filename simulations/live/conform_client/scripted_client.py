"""The repository's own ACP client: a small scripted client ``conform-client`` is checked with.

Scope
    One command a step, as a real command-line client works: it starts the agent it is
    given, initializes, does one thing and exits, keeping what it must remember (the session
    id, the prompt it was asked for) in ``--state DIR``::

        python -m simulations.live.conform_client.scripted_client --agent CMD --state DIR \\
            new [--mode append|override --prompt TEXT] | turn TEXT | fork | close

    ``new`` creates the session; ``turn`` re-opens it in this new agent process (load where
    advertised, else resume; no way to re-open: exit 1) and sends one turn; ``fork`` forks it
    (the child becomes the session); ``close`` closes it. The conforming build keeps the
    client's half of ACP v1 as stabilised: ``systemPrompt`` only where the agent advertised
    it, override only where advertised (else the prompt is not sent, and it says so on
    stderr), text blocks only, never an empty content, the same prompt re-sent on load,
    resume and fork, a method only where advertised.

    ``--build`` names a faulty build (the client kill matrix): each breaks one rule.

Source
    The rules: docs/protocol/v1 (session-setup, the systemPrompt field of NewSessionRequest,
    LoadSessionRequest, ResumeSessionRequest, ForkSessionRequest) as the registry cites them
    (T2–T6, S2–S5).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

# faulty builds: name → (the id it breaks, what it does)
BUILDS = {
    "conforming": ("", "keeps the client's rules"),
    "sends-unadvertised": ("T2", "sends systemPrompt to an agent that did not advertise it"),
    "override-unadvertised": ("T3", "asks for override from an agent advertising append only"),
    "fork-override": (
        "T3",
        "falls back to append on session/new where only append is offered, then forks with "
        "override",
    ),
    "empty-content": ("T5", "re-sends the prompt with content [] on load and resume"),
    "no-resend": ("T6", "re-sends no prompt on load, resume or fork"),
    "meta-prompt": ("prompt-outside", "writes the prompt in _meta.systemPrompt, not the field"),
    "loads-unadvertised": ("S2", "re-opens with session/load whatever the agent advertised"),
    "sends-garbage": ("SCHEMA", "writes a line that is not JSON before it initializes"),
    # where the plan of scenarios of one profile and one step sequence never looked
    "loads-forks": ("S2", "continues a fork with session/load whatever the agent advertised"),
    "keeps-creation-caps": (
        "T2",
        "re-sends the prompt where the agent advertised systemPrompt when the session was "
        "created, whatever it advertises now (after a restart that downgraded it)",
    ),
    "empty-after-upgrade": (
        "T5",
        "re-opens a session created without a prompt in the field (the agent did not take "
        "one then) with content [] once the agent advertises systemPrompt",
    ),
    "mention-link": (
        "T4",
        "turns an @file mention in the prompt into a resource_link block of its content",
    ),
    "closes-if-lists": ("S5", "closes a session where the agent advertises close or list"),
}
_STATE = "client-state.json"
BUILD_VARIABLE = "ACP_SYSPROMPT_CLIENT_BUILD"  # the build, where --build is not given


class _Agent:
    """The agent process on stdio: requests answered in order, its requests refused."""

    def __init__(self, cmd: str, garbage: bool = False):
        self.proc = subprocess.Popen(
            shlex.split(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.next_id = 0
        if garbage:  # the sends-garbage build: a line no JSON-RPC peer can read
            stdin = self.proc.stdin
            assert stdin is not None
            stdin.write(b"this line is not JSON\n")
            stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        mid, self.next_id = self.next_id, self.next_id + 1
        self._send({"jsonrpc": "2.0", "id": mid, "method": method, "params": params})
        while line := self.proc.stdout.readline():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "method" in msg and "id" in msg:  # the agent asks: this client serves nothing
                error = {"code": -32601, "message": "not served by the scripted client"}
                self._send({"jsonrpc": "2.0", "id": msg["id"], "error": error})
            elif msg.get("id") == mid and "method" not in msg:
                return msg
        raise SystemExit(f"scripted client: the agent ended before answering {method}")

    def _send(self, msg: dict[str, Any]) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        assert stdin is not None
        stdin.write((json.dumps(msg) + "\n").encode())
        stdin.flush()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _caps(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    agent = result.get("agentCapabilities") or {}
    return agent, agent.get("sessionCapabilities") or {}


def _prompt_field(
    state: dict[str, Any], session: dict[str, Any], build: str, method: str
) -> dict[str, Any]:
    """The systemPrompt member this build sends on ``method`` (empty: none)."""
    reopen = method != "session/new"
    text, mode = state.get("prompt"), state.get("mode")
    if text is None:
        return {}
    advertised = session.get("systemPrompt")
    if reopen and build == "keeps-creation-caps" and state.get("advertised") is not None:
        advertised = state["advertised"]  # what it saw when the session was created
    upgraded = not state.get("sent") and advertised is not None
    if reopen and build == "empty-after-upgrade" and upgraded:
        return {"systemPrompt": {"mode": "append", "content": []}}
    if build == "meta-prompt":
        return {"_meta": {"systemPrompt": text if mode == "override" else {"append": text}}}
    if advertised is None and build != "sends-unadvertised":
        return {}
    if reopen and (build == "no-resend" or not state.get("sent", True)):
        return {}  # (a session created with none in the field: none to repeat, T6)
    overrides = isinstance(advertised, dict) and "override" in (advertised.get("mode") or {})
    if mode == "override" and not overrides and build == "fork-override":
        # the fallback a client may take (append, which every advertising agent offers): kept
        # on new, load and resume; the fork forgets it and asks for the override again (T3)
        mode = "override" if method == "session/fork" else "append"
    elif mode == "override" and not overrides and build != "override-unadvertised":
        print("scripted client: the agent offers no override: prompt not sent", file=sys.stderr)
        return {}
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if build == "mention-link":
        content += [
            {
                "type": "resource_link",
                "uri": (Path.cwd() / word[1:].rstrip(".")).as_uri(),
                "name": word[1:].rstrip("."),
            }
            for word in text.split()
            if word.startswith("@") and len(word) > 1
        ]
    if reopen and build == "empty-content":
        content = []
    return {"systemPrompt": {"mode": mode, "content": content}}


def run(args: argparse.Namespace) -> int:
    state_dir = Path(args.state)
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / _STATE
    state: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    agent = _Agent(args.agent, garbage=args.build == "sends-garbage")
    try:
        init = agent.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                "clientInfo": {"name": "acp-sysprompt-scripted-client", "version": "0"},
            },
        )
        top, session = _caps(init.get("result") or {})
        cwd = str(Path.cwd())
        if args.action == "new":
            state = {"prompt": args.prompt, "mode": args.mode if args.prompt is not None else None}
            field = _prompt_field(state, session, args.build, "session/new")
            # what it saw and sent at creation (the faulty builds keep to it)
            state.update(advertised=session.get("systemPrompt"), sent="systemPrompt" in field)
            params = {"cwd": cwd, "mcpServers": [], **field}
            answer = agent.call("session/new", params)
            if "result" not in answer:
                print(
                    f"scripted client: session/new refused: {answer.get('error')}", file=sys.stderr
                )
                return 1
            state["sessionId"] = answer["result"]["sessionId"]
            path.write_text(json.dumps(state))
            return 0
        sid = state.get("sessionId")
        if sid is None:
            print("scripted client: no session: run `new` first", file=sys.stderr)
            return 2
        if args.action == "turn":
            loads = args.build == "loads-unadvertised" or (
                args.build == "loads-forks" and state.get("forked")
            )
            if top.get("loadSession") is True or loads:
                method = "session/load"
            elif session.get("resume") is not None:
                method = "session/resume"
            else:
                print("scripted client: the agent can neither load nor resume", file=sys.stderr)
                return 1
            params = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
            answer = agent.call(
                method, {**params, **_prompt_field(state, session, args.build, method)}
            )
            if "result" not in answer:
                print(f"scripted client: {method} refused: {answer.get('error')}", file=sys.stderr)
                return 1
            answer = agent.call(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": args.text}]},
            )
            return 0 if "result" in answer else 1
        if args.action == "fork":
            if session.get("fork") is None:
                print("scripted client: the agent does not fork", file=sys.stderr)
                return 1
            params = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
            answer = agent.call(
                "session/fork",
                {**params, **_prompt_field(state, session, args.build, "session/fork")},
            )
            if "result" not in answer:
                return 1
            state["sessionId"], state["forked"] = answer["result"]["sessionId"], True
            path.write_text(json.dumps(state))
            return 0
        # close
        lists = args.build == "closes-if-lists" and session.get("list") is not None
        if session.get("close") is None and not lists:
            print("scripted client: the agent does not close sessions", file=sys.stderr)
            return 1
        answer = agent.call("session/close", {"sessionId": sid})
        return 0 if "result" in answer else 1
    finally:
        agent.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m simulations.live.conform_client.scripted_client",
        description="A small ACP client, one step a command (conform-client's own client).",
    )
    p.add_argument("--agent", required=True, help="the agent's command line")
    p.add_argument("--state", required=True, metavar="DIR", help="what it remembers, between steps")
    p.add_argument(
        "--build",
        choices=BUILDS,
        default=os.environ.get(BUILD_VARIABLE, "conforming"),
        help=f"a faulty build (default: ${BUILD_VARIABLE}, else conforming)",
    )
    sub = p.add_subparsers(dest="action", required=True)
    new = sub.add_parser("new")
    new.add_argument("--prompt")
    new.add_argument("--mode", choices=("append", "override"), default="append")
    turn = sub.add_parser("turn")
    turn.add_argument("text")
    sub.add_parser("fork")
    sub.add_parser("close")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
