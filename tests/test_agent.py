"""The reference agent (``python -m simulations.agent``) answers on stdio what the model says.

The strongest check runs model traces against the live process — the model's scenarios and
seeded random walks over the revision's request domain, each with a real process restart on
the same ``--store`` — and compares the live transcript with ``transcript(trace, tables)``
message for message. A faulty build (a profile file, a mutant) is run the same way: its live
replies equal its own tables' transcript and differ from the reference's where the model says
they do. The rest: the introspection extension, history replay, the store file, bad input.
Every process is stopped in a ``finally``.
"""

from __future__ import annotations

import itertools
import json
import queue
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from model.machines import Compiled
from model.mutants import MUTANTS
from model.profiles import PROFILES, load_profile
from model.revisions import REVISIONS
from model.tables import Tables
from model.types import BASE, Caps, ClientKind, PromptCap, Request, initial_world
from simulations.api import UsageError
from simulations.engines.conversation import AGENT_MESSAGE
from simulations.engines.domain import domain_for, text
from simulations.engines.scenarios import SCENARIOS
from simulations.engines.trace import Trace, replay
from simulations.live.reference.agent import (
    STORE_FILE,
    Build,
    ReferenceAgent,
    build_for,
    caps_text,
    default_caps,
    parse_caps,
)
from simulations.live.reference.stdio import main
from simulations.wire.acp import INTROSPECTION_METHOD, notification, revision_wire, transcript

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 10.0  # seconds one answer may take before the test fails (it never should)


class Live:
    """One agent process on pipes: send a request, read notifications up to its response."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "simulations.agent", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def request(self, message: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        notes: list[dict[str, Any]] = []
        while True:
            line = self.lines.get(timeout=TIMEOUT)
            assert line, f"the agent closed stdout; stderr: {self.stop()}"
            got = json.loads(line)
            if "method" in got:
                notes.append(got)
            else:
                return notes, got

    def stop(self) -> str:
        """Close stdin, wait for the exit (kill past the timeout); the agent's stderr. The
        agent must have exited by itself, with status 0."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stderr is not None
        err = self.proc.stderr.read().decode()
        self.proc.stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        assert self.proc.returncode == 0, err
        return err


def _requests(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return iter(m for m in messages if "method" in m and "id" in m)


def run_live(trace: Trace, tables: Tables, wire: str, args: list[str]) -> list[dict[str, Any]]:
    """The live transcript of ``trace``: each request ``transcript`` sends, the notifications
    the agent sent before its answer, the answer. ``connect`` starts the process, ``restart``
    stops it: the next connect starts a new one on the same arguments (and store)."""
    sent = _requests(transcript(trace, tables, wire=wire))
    live: list[dict[str, Any]] = []
    agent: Live | None = None
    try:
        for req in trace.requests:
            if req.method == "connect":
                assert agent is None, "one connection per process"
                agent = Live(args)
            elif req.method == "restart":
                assert agent is not None
                agent.stop()
                agent = None
            else:
                assert agent is not None
                message = next(sent)
                notes, response = agent.request(message)
                live += [message, *notes, response]
    finally:
        if agent is not None:
            agent.stop()
    return live


def agent_args(revision: str, caps: Caps, store: Path, *more: str) -> list[str]:
    return ["--revision", revision, "--caps", caps_text(caps), "--store", str(store), *more]


def walk(revision: str, caps: Caps, seed: int, steps: int, tables: Tables | None = None) -> Trace:
    """A seeded random walk over the revision's request domain on one connection: a method
    drawn first, then one of its requests (mostly on a session that exists); one restart
    (same profile) half-way, then a new connection."""
    rev = REVISIONS[revision]
    domain = replace(
        domain_for(revision, rev.admits),
        max_connections=1,
        clients=(ClientKind.ADVERSARIAL,),
        restarts="same",
        max_sessions=3,
    )
    rng = random.Random(seed)
    connect, initialize = Request("connect", client=ClientKind.ADVERSARIAL), Request("initialize")
    system = Compiled(rev.tables if tables is None else tables)
    world = initial_world(caps)
    requests: list[Request] = []
    for i in range(steps):
        if i in (0, steps // 2):
            chosen = [connect, initialize] if i == 0 else [Request("restart"), connect, initialize]
        else:
            known = {s.sid for s in world.agent.store}
            by_method: dict[str, dict[str | None, list[Request]]] = {}
            for r in domain.requests(world):
                if r.method not in ("connect", "restart", "initialize"):
                    by_method.setdefault(r.method, {}).setdefault(r.sid, []).append(r)
            by_sid = by_method[rng.choice(sorted(by_method))]
            sids = sorted(by_sid, key=str)
            existing = [sid for sid in sids if sid is None or sid in known]
            sid = rng.choice(existing if existing and rng.random() < 0.9 else sids)
            chosen = [rng.choice(by_sid[sid])]
        for r in chosen:
            world = system.step(world, r).after
        requests += chosen
    return Trace(caps, tuple(requests))


def _one_process_traces(revision: str) -> dict[str, Trace]:
    """The model's scenarios a single stdio connection can run on ``revision``'s wire."""
    admits = REVISIONS[revision].admits
    return {
        name: t
        for name, t in SCENARIOS.items()
        if all(r.conn == 0 for r in t.requests)
        and all(r.profile is None for r in t.requests if r.method == "restart")
        and all(admits(r) for r in t.requests)
    }


@pytest.mark.parametrize("revision", ["rfd-final", "v1-stable"])
def test_live_transcripts_equal_the_models(revision: str, tmp_path: Path) -> None:
    """The model's scenarios a single connection can run and a random walk with a real restart
    on the same store: the live agent answers every request with exactly the message the
    model's transcript shows. (Every revision's walks are run in process below.)"""
    wire = revision_wire(revision)
    tables = REVISIONS[revision].tables
    traces = dict(_one_process_traces(revision))
    full = default_caps(wire)
    traces["walk"] = walk(revision, full, seed=1, steps=50)
    assert len(traces) >= 2  # rfd-final: 3 scenarios, v1-stable: 1 (a restart in it)
    notified: dict[str, int] = {}
    for name, trace in traces.items():
        store = tmp_path / name
        expected = transcript(trace, tables, wire=wire)
        live = run_live(trace, tables, wire, agent_args(revision, trace.profile, store))
        assert live == expected, name  # requests, notifications and answers alike
        # the notifications: a streamed chunk per answered turn, the history on a replay
        replayed = [
            r
            for r in replay(trace, tables)
            if r.step.sent and r.step.request.method not in ("connect", "restart")
        ]
        asked = [i for i, m in enumerate(live) if "method" in m and "id" in m]
        for r, i in zip(replayed, asked, strict=True):
            reply, req = r.step.reply, r.step.request
            n = list(itertools.takewhile(lambda m: "id" not in m, live[i + 1 :]))
            if reply.ok and req.method == "session_prompt":
                assert [x["params"]["update"]["sessionUpdate"] for x in n] == [
                    "agent_message_chunk"
                ]
            elif not (reply.ok and reply.replayed):
                assert n == [], (name, req)
            assert all(x["params"]["sessionId"] == req.sid for x in n)
        notified[name] = sum(m.get("method") == "session/update" for m in live)
        assert (store / STORE_FILE).is_file()
    assert notified["walk"] > 0, notified


def run_in_process(trace: Trace, build: Build, store: Path) -> list[dict[str, Any]]:
    """``run_live`` without processes: ``ReferenceAgent.handle`` for each request, a new
    ``ReferenceAgent`` on the same store for each connect after a restart."""
    sent = _requests(transcript(trace, build.tables, wire=build.wire))
    out: list[dict[str, Any]] = []
    agent: ReferenceAgent | None = None
    for req in trace.requests:
        if req.method == "connect":
            agent = ReferenceAgent(build, store)
        elif req.method != "restart":
            assert agent is not None
            message = next(sent)
            answer = agent.handle(message["id"], message["method"], message["params"])
            out += [message, *map(notification, answer.updates), answer.response]
    return out


@pytest.mark.parametrize("revision", sorted(REVISIONS))
def test_every_revision_answers_as_its_model_in_process(revision: str, tmp_path: Path) -> None:
    """Every revision's reference agent (its own wire and default capabilities), on two random
    walks with a restart, answers what the model's transcript shows."""
    wire = revision_wire(revision)
    build = Build(revision, REVISIONS[revision].tables, default_caps(wire), revision)
    for seed in (1, 2):
        trace = walk(revision, build.caps, seed=seed, steps=40)
        expected = transcript(trace, build.tables, wire=wire)
        assert run_in_process(trace, build, tmp_path / str(seed)) == expected


BUILDS = [("mutant", m) for m in sorted(MUTANTS)] + [("profile", p) for p in sorted(PROFILES)]


@pytest.mark.parametrize(("kind", "name"), BUILDS, ids=[n for _, n in BUILDS])
def test_every_faulty_build_answers_as_its_tables_in_process(
    kind: str, name: str, tmp_path: Path
) -> None:
    """Each mutant and shipped profile, built as the command line builds it, answers a random
    walk with a restart (its store written to JSON and read back) as its own tables' model."""
    build = build_for(mutant=name) if kind == "mutant" else build_for(profile=name)
    trace = walk(build.revision, build.caps, seed=3, steps=30, tables=build.tables)
    expected = transcript(trace, build.tables, wire=build.wire)
    assert run_in_process(trace, build, tmp_path) == expected


def test_the_comparison_catches_an_agent_that_skips_the_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Teeth: an agent that reopens its store without the model's restart event (its sessions
    stay active on a connection that is gone) no longer answers as the model does: after the
    restart it runs a turn on a session nobody re-opened."""
    forked = SCENARIOS["override_session_forked_and_resumed"]
    resume = forked.requests.index(Request("session_resume", sid="s2"))
    trace = replace(forked, requests=forked.requests[:resume] + forked.requests[resume + 1 :])
    build = Build("rfd-final", REVISIONS["rfd-final"].tables, trace.profile, "rfd-final")
    expected = transcript(trace, build.tables, wire=build.wire)
    assert run_in_process(trace, build, tmp_path / "ok") == expected
    real = ReferenceAgent._move

    def forgetful(self: ReferenceAgent, world: Any, req: Request) -> Any:
        return world if req.method == "restart" else real(self, world, req)

    monkeypatch.setattr(ReferenceAgent, "_move", forgetful)
    assert run_in_process(trace, build, tmp_path / "forgetful") != expected


def test_the_walks_reach_what_matters() -> None:
    """The walks are not trivial: sessions are created, reopened, prompted and refused."""
    wire = revision_wire("v1-stable")
    trace = walk("v1-stable", default_caps(wire), seed=1, steps=30)
    steps = replay(trace, REVISIONS["v1-stable"].tables)
    methods = {(s.step.request.method, s.step.reply.ok) for s in steps}
    assert {("restart", True), ("session_new", True), ("session_prompt", True)} <= methods
    assert any(not s.step.reply.ok for s in steps)


def _lossy(tmp_path: Path) -> Path:
    profile = tmp_path / "lossy.toml"
    profile.write_text('name = "lossy"\nrevision = "rfd-final"\non_load = "default"\n')
    return profile


def _close_and_load(new: Request) -> tuple[Request, ...]:
    return (
        Request("connect"),
        Request("initialize"),
        new,
        Request("session_close", sid="s1"),
        Request("session_load", sid="s1"),
        Request("session_prompt", sid="s1"),
    )


def _faulty_case(
    revision: str, build_tables: Tables, args: list[str], new: Request, tmp_path: Path
) -> None:
    wire = revision_wire(revision)
    caps = default_caps(wire)
    trace = Trace(caps, _close_and_load(new))
    reference = transcript(trace, REVISIONS[revision].tables, wire=wire)
    predicted = transcript(trace, build_tables, wire=wire)
    live = run_live(trace, build_tables, wire, agent_args(revision, caps, tmp_path, *args))
    assert live == predicted  # the faulty build answers what its own tables say …
    differ = [i for i, (a, b) in enumerate(zip(live, reference, strict=True)) if a != b]
    # … which departs from the reference where the load answers (its result shows the slot
    # the session runs under) and on the last turn (after its streamed chunk)
    assert differ == [len(live) - 4, len(live) - 1]
    assert live[-2]["method"] == "session/update"
    assert reference[-4]["result"]["_meta"]["systemSlot"] == [BASE, "a"]
    assert reference[-1]["result"]["_meta"]["systemSlot"] == [BASE, "a"]


def test_a_profile_knob_makes_a_faulty_build(tmp_path: Path) -> None:
    """on_load = "default" from a TOML file: after close and load, the live agent's turn runs
    under the default prompt, where the reference restores the client's."""
    profile = _lossy(tmp_path)
    new = Request("session_new", system_prompt=text("a"))
    tables = load_profile(str(profile)).tables()
    _faulty_case("rfd-final", tables, ["--profile", str(profile)], new, tmp_path / "store")


def test_a_mutant_makes_a_faulty_build(tmp_path: Path) -> None:
    """v1-stable's v1_load_without_prompt_empties_slot: the live turn after load runs an
    empty slot."""
    name = "v1_load_without_prompt_empties_slot"
    new = Request("session_new", system_prompt=text("a"), mode="append")
    _faulty_case("v1-stable", MUTANTS[name].tables, ["--mutant", name], new, tmp_path)


def test_introspection_replay_and_restart(tmp_path: Path) -> None:
    """The extension returns the slot of an active session, null for one that is not, -32002
    for an unknown one; load replays the history (and a restart keeps it), resume does not."""
    args = ["--revision", "v1-stable", "--store", str(tmp_path)]
    envelope = {"mode": "append", "content": [{"type": "text", "text": "a"}]}
    hello = [{"type": "text", "text": "hello"}]
    ids = iter(range(1, 100))

    def call(agent: Live, method: str, **params: Any) -> tuple[list[dict[str, Any]], Any]:
        n, r = agent.request(
            {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}
        )
        return n, r.get("result", r.get("error"))

    def slot(agent: Live, sid: str) -> Any:
        return call(agent, INTROSPECTION_METHOD, sessionId=sid)[1]

    agent = Live(args)
    try:
        call(agent, "initialize", protocolVersion=1)
        assert call(agent, "session/new", cwd="/w", mcpServers=[], systemPrompt=envelope)[1] == {
            "sessionId": "s1",
            "_meta": {"systemSlot": [BASE, "a"]},
        }
        assert slot(agent, "s1") == {"systemSlot": [BASE, "a"]}
        assert slot(agent, "s9") == {"code": -32002, "message": "unknown session: s9"}
        assert slot(agent, 7)["code"] == -32602  # type: ignore[arg-type]
        call(agent, "session/prompt", sessionId="s1", prompt=hello)
        call(agent, "session/close", sessionId="s1")
        assert slot(agent, "s1") == {"systemSlot": None}
        assert call(agent, "session/bogus")[1]["code"] == -32601
        bad = call(agent, "session/load", sessionId="s1", cwd="/w", mcpServers=[], systemPrompt=5)
        assert bad[1]["code"] == -32602 and "params.systemPrompt" in bad[1]["message"]
    finally:
        agent.stop()
    agent = Live(args)  # a restart on the same store
    try:
        call(agent, "initialize", protocolVersion=1)
        assert slot(agent, "s1") == {"systemSlot": None}  # stored, not active
        notes, result = call(agent, "session/load", sessionId="s1", cwd="/w", mcpServers=[])
        assert result == {"_meta": {"systemSlot": [BASE, "a"]}}
        updates = [n["params"]["update"] for n in notes]
        assert updates == [
            {"sessionUpdate": "user_message_chunk", "content": hello[0]},
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": AGENT_MESSAGE},
            },
        ]
        assert slot(agent, "s1") == {"systemSlot": [BASE, "a"]}
        call(agent, "session/close", sessionId="s1")
        notes, result = call(agent, "session/resume", sessionId="s1", cwd="/w", mcpServers=[])
        assert (notes, result) == ([], {"_meta": {"systemSlot": [BASE, "a"]}})
    finally:
        err = agent.stop()
    assert "restarted" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--revision", "v9"], "argument --revision: unknown revision 'v9'"),
        (["--profile", "{nope}.toml"], "argument --profile: cannot read '{nope}.toml'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], names: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "simulations.agent", *args],
        cwd=ROOT,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and names in lines[0], lines


def test_the_agent_loads_the_sdks_jsonrpc_layer_alone() -> None:
    """``sdk_connection`` loads ``acp.connection`` without the SDK's schema models and leaves
    no ``acp`` module in ``sys.modules``: a later ``import acp`` there is an ordinary one."""
    code = (
        "import sys\n"
        "from simulations.live.reference.stdio import sdk_connection\n"
        "jsonrpc = sdk_connection()\n"
        "assert jsonrpc.Connection and jsonrpc.RequestError and jsonrpc.StreamDirection\n"
        "assert not [m for m in sys.modules if m == 'acp' or m.startswith('acp.')]\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--caps", "systemPrompt=loud"], "argument --caps: systemPrompt=loud"),
        (["--caps", "teleport"], "argument --caps: unknown item 'teleport'"),
        (["--revision", "v1-stable", "--mutant", "load_restores_default"], "argument --mutant"),
        (["--profile", "final-default-on-load", "--mutant", "append_drops_base"], "--profile"),
        (["--profile", "final-default-on-load", "--revision", "v1-stable"], "--profile"),
        (["--profile", "v1-default-on-load", "--caps", "systemPrompt=replace"], "--caps"),
    ],
)
def test_refused_combinations(
    args: list[str], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and names in err[0], err


def test_a_broken_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / STORE_FILE).write_text('{"format": "acp-sysprompt-agent-store/1", "sessions": 3}')
    assert main(["--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "sessions: expected an array" in err[0], err


def test_caps_round_trip_and_profile_advertisement(tmp_path: Path) -> None:
    """--caps reads back what caps_text writes; the default is the fullest profile the wire
    and a profile's advertises_prompt allow, and initialize advertises exactly that."""
    for wire in ("blocks", "envelope", "envelope-v2", "instructions", "string"):
        caps = default_caps(wire)
        assert parse_caps(caps_text(caps), wire) == caps
    assert not default_caps("envelope-v2").load_session
    assert default_caps("instructions").system_prompt is PromptCap.OVERRIDE
    assert default_caps("string").system_prompt is PromptCap.APPEND
    profile = tmp_path / "appends.toml"
    profile.write_text('name = "appends"\nrevision = "v1-stable"\nadvertises_prompt = "append"\n')
    build = build_for(profile=str(profile))
    assert build.caps == replace(default_caps("envelope"), system_prompt=PromptCap.APPEND)
    initialize = ReferenceAgent(build).handle(1, "initialize", {"protocolVersion": 1})
    advertised = initialize.response["result"]["agentCapabilities"]["sessionCapabilities"]
    assert advertised["systemPrompt"] == {}  # append only
    with pytest.raises(UsageError, match="the profile advertises only append"):
        build_for(profile=str(profile), caps="systemPrompt=override")
    profile.write_text('name = "blind"\nrevision = "v1-stable"\nadvertises_prompt = "none"\n')
    blind = ReferenceAgent(build_for(profile=str(profile)))
    result = blind.handle(1, "initialize", {"protocolVersion": 1}).response["result"]
    assert "systemPrompt" not in result["agentCapabilities"]["sessionCapabilities"]


def test_the_store_is_what_a_restart_reads(tmp_path: Path) -> None:
    """In process: a session created, then a second agent on the same store finds it stored
    (the model's restart), and a store of the mutant restart_loses_store is emptied."""
    build = Build("rfd-final", REVISIONS["rfd-final"].tables, default_caps("blocks"), "t")
    first = ReferenceAgent(build, tmp_path)
    first.handle(1, "initialize", {"protocolVersion": 1})
    first.handle(2, "session/new", {"cwd": "/w", "mcpServers": [], "systemPrompt": []})
    assert first.handle(3, "session/new", {"cwd": "/w", "mcpServers": []}).response["result"] == {
        "sessionId": "s1",
        "_meta": {"systemSlot": [BASE]},
    }
    second = ReferenceAgent(build, tmp_path)
    assert [(s.sid, s.status.value) for s in second.world.agent.store] == [("s1", "stored")]
    lossy = replace(build, tables=MUTANTS["restart_loses_store"].tables)
    third = ReferenceAgent(lossy, tmp_path)
    assert third.world.agent.store == () and third.world.agent.issued == 0
    assert json.loads((tmp_path / STORE_FILE).read_text())["sessions"] == []


def test_initialize_names_the_agent() -> None:
    """Issue 27: the v1 initialize result carries ``agentInfo`` (an Implementation: name and
    version), as the official test kit's INIT-004 asks."""
    agent = ReferenceAgent(build_for(revision="v1-stable"))
    result = agent.handle(1, "initialize", {"protocolVersion": 1}).response["result"]
    info = result["agentInfo"]
    assert set(info) == {"name", "version"} and all(isinstance(v, str) for v in info.values())


def _listed(agent: ReferenceAgent, n: int, **params: str) -> list[tuple[str, str]]:
    result = agent.handle(n, "session/list", params).response["result"]
    return [(e["sessionId"], e["cwd"]) for e in result["sessions"]]


def test_session_list_reports_each_sessions_own_cwd_and_filters_by_it(tmp_path: Path) -> None:
    """Issue 27: ``session/list`` names the working directory each session was created (or
    last reopened) with, keeps only the sessions in the ``cwd`` it asks for, and a restart
    (a second agent on the same store) still knows them. Before, every session was listed in
    the wire mapping's one constant directory and the filter was ignored (kit ACP-LIST-002)."""
    build = build_for(revision="v1-stable")
    agent = ReferenceAgent(build, tmp_path)
    agent.handle(1, "initialize", {"protocolVersion": 1})
    for n, cwd in ((2, "/a"), (3, "/b")):
        assert agent.handle(n, "session/new", {"cwd": cwd, "mcpServers": []}).error is None
    assert _listed(agent, 4) == [("s1", "/a"), ("s2", "/b")]
    assert _listed(agent, 5, cwd="/b") == [("s2", "/b")]
    assert _listed(agent, 6, cwd="/elsewhere") == []
    assert agent.handle(7, "session/close", {"sessionId": "s1"}).error is None
    load = {"sessionId": "s1", "cwd": "/c", "mcpServers": []}
    assert agent.handle(8, "session/load", load).error is None
    assert _listed(agent, 9) == [("s1", "/c"), ("s2", "/b")]
    again = ReferenceAgent(build, tmp_path)
    again.handle(1, "initialize", {"protocolVersion": 1})
    assert _listed(again, 2, cwd="/c") == [("s1", "/c")]
    stored = json.loads((tmp_path / STORE_FILE).read_text())["sessions"]
    assert [s["cwd"] for s in stored] == ["/c", "/b"]


def test_lines_that_are_no_request_get_json_rpcs_error_and_the_agent_goes_on() -> None:
    """Issue 27 (kit BATCH-201 on v2): a line that is not JSON is answered -32700 and an
    empty batch or a value that is no object -32600, each with id null as JSON-RPC 2.0 says;
    before, they were dropped unanswered. The next request is served."""
    live = Live(["--revision", "v2-draft"])
    assert live.proc.stdin is not None
    got = []
    for raw in (b"{not json\n", b"[]\n", b"7\n"):
        live.proc.stdin.write(raw)
        live.proc.stdin.flush()
        answer = json.loads(live.lines.get(timeout=TIMEOUT))
        got.append((answer["id"], answer["error"]["code"]))
    assert got == [(None, -32700), (None, -32600), (None, -32600)]
    _, answer = live.request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert answer["id"] == 1
    err = live.stop()
    assert "stdin line 2: invalid request: an empty batch, answered -32600" in err


def test_batches_are_served_as_json_rpc_says() -> None:
    """Issue 27 (kit ACP-BATCH-202/203/204, v2 §6): a batch of notifications gets no answer;
    a batch of entries that are no object gets one array of -32600 errors, one per entry; a
    batch of requests gets one array holding each answer, matched by id; a batch that mixes
    a request with a response answers the request alone. The connection goes on after each.
    Before, every non-empty batch got one -32600 (and a batch of notifications an answer)."""
    live = Live(["--revision", "v2-draft"])
    assert live.proc.stdin is not None
    _, answer = live.request(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}
    )
    assert answer["id"] == 0

    def send(batch: list[object]) -> None:
        assert live.proc.stdin is not None
        live.proc.stdin.write(json.dumps(batch).encode() + b"\n")
        live.proc.stdin.flush()

    send([{"jsonrpc": "2.0", "method": "_kit/notify_only"}])
    send([17, True, None])
    errors = json.loads(live.lines.get(timeout=TIMEOUT))  # nothing came for the first batch
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, -32600)] * 3
    send([{"jsonrpc": "2.0", "id": i, "method": "session/list"} for i in ("a", "b")])
    both = json.loads(live.lines.get(timeout=TIMEOUT))
    assert sorted(r["id"] for r in both) == ["a", "b"] and all("result" in r for r in both)
    send(
        [
            {"jsonrpc": "2.0", "id": "c", "method": "_kit/none"},
            {"jsonrpc": "2.0", "id": "d", "result": {}},
        ]
    )
    mixed = json.loads(live.lines.get(timeout=TIMEOUT))
    assert [(r["id"], r["error"]["code"]) for r in mixed] == [("c", -32601)]
    _, answer = live.request({"jsonrpc": "2.0", "id": 5, "method": "session/list"})
    assert answer["id"] == 5 and "result" in answer
    err = live.stop()
    assert "a batch of 2 (2 requests, 0 invalid)" in err


@pytest.mark.parametrize("revision", ["v1-stable", "rfd-final"])
def test_load_and_resume_of_a_session_live_on_the_connection_are_served(
    revision: str, tmp_path: Path
) -> None:
    """Issue 27 (kit ACP-LOAD-001/002, RESUME-001/002): initialize, session/new, then
    session/load and session/resume of that session on the same connection succeed; the load
    replays the turn before it answers, the resume does not (S8), and the session still runs
    under its prompt. With ``active_reopen = "refuse"`` (the model's answer to Q11 before)
    both get -32600, as a session live on another connection always does."""
    agent = ReferenceAgent(build_for(revision=revision), tmp_path / "serve")
    agent.handle(1, "initialize", {"protocolVersion": 1})
    new = agent.handle(2, "session/new", {"cwd": "/w", "mcpServers": []}).response["result"]
    sid = new["sessionId"]
    turn = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    assert agent.handle(3, "session/prompt", turn).error is None
    reopen = {"sessionId": sid, "cwd": "/w", "mcpServers": []}
    load = agent.handle(4, "session/load", reopen)
    assert load.error is None and load.response["result"] is not None
    assert any(u["update"]["sessionUpdate"] == "user_message_chunk" for u in load.updates)
    resume = agent.handle(5, "session/resume", reopen)
    assert resume.error is None and resume.updates == []
    assert agent.handle(6, "session/prompt", turn).error is None
    profile = tmp_path / "refuse.toml"
    profile.write_text(f'name = "r"\nrevision = "{revision}"\nactive_reopen = "refuse"\n')
    refusing = ReferenceAgent(build_for(profile=str(profile)), tmp_path / "refuse")
    refusing.handle(1, "initialize", {"protocolVersion": 1})
    assert refusing.handle(2, "session/new", {"cwd": "/w", "mcpServers": []}).error is None
    for n, method in ((3, "session/load"), (4, "session/resume")):
        answer = refusing.handle(n, method, reopen)
        assert answer.error is not None and answer.error["code"] == -32600


def test_stdout_and_stdin_may_be_regular_files(tmp_path: Path) -> None:
    """Issue 44: ``python -m simulations.agent ... > answers`` exited 2 ("stdout is neither a
    pipe, a socket nor a terminal"), and ``< requests`` too. Now each answer is in the file
    as soon as it is sent (the next request is written only once it is there), and a whole
    session read from a file is answered into another."""
    import time

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    new = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {
            "cwd": "/w",
            "mcpServers": [],
            "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "a"}]},
        },
    }
    out = tmp_path / "answers.ndjson"

    def answers(want: int) -> list[dict[str, Any]]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            text = out.read_bytes()
            if text.count(b"\n") >= want or time.monotonic() > deadline:
                return [json.loads(line) for line in text.splitlines()]
            time.sleep(0.02)

    with out.open("wb") as sink:  # stdout a regular file, stdin a pipe
        proc = subprocess.Popen(
            [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.PIPE,
        )
    try:
        assert proc.stdin is not None
        for k, message in enumerate((init, new), 1):
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            got = answers(k)
            assert len(got) == k and got[-1]["id"] == message["id"], (got, proc.poll())
        proc.stdin.close()
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.returncode == 0, err
    first = answers(2)
    assert first[0]["result"]["protocolVersion"] == 1
    assert first[1]["result"] == {"sessionId": "s1", "_meta": {"systemSlot": [BASE, "a"]}}
    # both ends files: the same answers
    requests = tmp_path / "requests.ndjson"
    requests.write_text(json.dumps(init) + "\n" + json.dumps(new) + "\n")
    again = tmp_path / "again.ndjson"
    with requests.open("rb") as source, again.open("wb") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"],
            cwd=ROOT,
            stdin=source,
            stdout=sink,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(line) for line in again.read_bytes().splitlines()] == first
