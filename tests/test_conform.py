"""``acp-sysprompt conform``: a live agent on stdio judged by the model, and always cleaned up.

The agents here are throwaway scripts written into ``tmp_path``: one that hangs, one that
crashes, one that prints garbage, one that floods stderr, one that closes its stdout; and a
tiny model-driven stand-in that can leave out the introspection extension. Against the
reference agent (``python -m simulations.agent``): selections of the rfd-final and v1-stable
suites conform (the whole suites: bench/conform_bench.py), and seven faulty builds (profile
knobs, mutants) each fail their id.
Each run must end within its timeouts with a FAIL naming the cause, and leave no process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from model.machines import Step, System
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.types import BASE, Caps, ClientKind, PromptCap, Request, initial_world
from simulations.api import bound_for
from simulations.engines.domain import text
from simulations.live.conform.conform import conform
from simulations.live.conform.coverage import COVER_TEST
from simulations.live.conform.plan import agent_mutants, kill_setup, mutant_path
from simulations.live.conform.report import render, to_json, write_counterexamples
from simulations.live.oracle.judge import (
    Seen,
    caps_of,
    choice_options,
    chosen,
    judge_departure,
    tier,
)
from simulations.live.oracle.results import (
    ADVISORY,
    CAPABILITY,
    FAIL,
    INFORMATIONAL,
    MANDATORY,
    NOT_OBSERVABLE,
    PASS,
    ConformError,
    LiveTest,
)
from simulations.live.reference.agent import caps_text, default_caps
from simulations.live.validate.validate import validate_messages
from simulations.wire.acp import INTROSPECTION_METHOD, _agent_capabilities, revision_wire

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")

ROOT = Path(__file__).resolve().parent.parent

# A model-driven agent: the revision's tables (or a mutant's) answer each request; the store
# (the model's agent, pickled) survives a restart. Not the reference agent (simulations.agent):
# a 60-line stand-in that lets these tests run without it.
MODEL_AGENT = """
import json, os, pickle, sys
from pathlib import Path
from model.machines import System
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.types import ClientKind, Request, initial_world
from simulations.engines.trace import ReplayedStep
from simulations.wire.acp import _response, request_of, revision_wire

revision, store, mutant, introspect = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
caps = eval(sys.argv[5])
tables = MUTANTS[mutant].tables if mutant != "none" else REVISIONS[revision].tables
if os.environ.get("MODEL_AGENT_FORGET_MODES") == "1":  # the store keeps texts, not modes
    from model.mutants import swap_effect
    tables = swap_effect(tables, "agent", "restart_keeping_store", "restart_forgetting_modes")
wire = revision_wire(revision)
system = System(tables)
if store.exists():
    world, turns = pickle.loads(store.read_bytes())
    world = system.step(world, Request("restart")).after
else:
    world, turns = initial_world(caps), {}
world = system.step(world, Request("connect", client=ClientKind.ADVERSARIAL)).after

NULLS = os.environ.get("MODEL_AGENT_NULLS") == "1"  # null for a request it should refuse
SAME_ID = os.environ.get("MODEL_AGENT_SAME_ID") == "1"  # one id for every session
HANG = os.environ.get("MODEL_AGENT_HANG", "")  # a method it never answers
TAKEOVER = os.environ.get("MODEL_AGENT_TAKEOVER") == "1"  # serves a resume the model refuses
ECHO = os.environ.get("MODEL_AGENT_ECHO") == "1"  # answers initialize with the version asked
MISSING = os.environ.get("MODEL_AGENT_MISSING", "")  # a method it answers -32601
STRAY = os.environ.get("MODEL_AGENT_STRAY") == "1"  # a turn's update names another session
OTHERS = os.environ.get("MODEL_AGENT_OTHERS", "")  # an update kind sent for other live sessions
NULL_LOAD = os.environ.get("MODEL_AGENT_NULL_LOAD") == "1"  # a served load answers result null
LATE = os.environ.get("MODEL_AGENT_LATE") == "1"  # a load's history after its answer
REPLAYS = os.environ.get("MODEL_AGENT_REPLAYS") == "1"  # a resume replays history too
PARSE = os.environ.get("MODEL_AGENT_PARSE", "")  # a line not JSON: crash, or silent (no answer)
# racy: LATE on the 1st, 3rd, 5th, ... load it serves, counted in this file across processes
LATE_ODD = os.environ.get("MODEL_AGENT_LATE_ODD", "")

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\\n")
    sys.stdout.flush()

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        if PARSE == "crash":
            raise
        if PARSE == "no-id":  # what @zed-industries/codex-acp 0.16.0 answers
            send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}})
        elif PARSE != "silent":
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}})
        continue
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "_acp_sysprompt/system_slot":
        if introspect in ("sdk", "null"):  # what the SDK answers an extension it lacks
            result = {"example": "response"} if introspect == "sdk" else None
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            continue
        if introspect != "yes":
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
            continue
        s = world.agent.session(msg["params"]["sessionId"])
        slot = None if s is None or s.live is None else list(s.live)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"systemSlot": slot}})
        continue
    if msg["method"] == HANG:
        continue
    if msg["method"] == MISSING:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
        continue
    req = request_of(msg, wire)
    step = system.step(world, req)
    world = step.after
    if TAKEOVER and req.method == "session_resume" and step.reply.code == -32600:
        # serves it (a deleted session, here) and, wrongly, replays history
        update = {"sessionUpdate": "agent_message_chunk",
                  "content": {"type": "text", "text": "earlier"}}
        send({"jsonrpc": "2.0", "method": "session/update",
              "params": {"sessionId": req.sid, "update": update}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        continue
    if NULLS and step.reply.code in (-32600, -32601):  # what the SDK's example agents do
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        continue
    if OTHERS and step.reply.ok and req.method in ("session_prompt", "session_load"):
        for other in sorted(turns):  # sessions prompted before, live on this connection
            s = world.agent.session(other)
            if other == req.sid or s is None or s.live is None:
                continue
            if OTHERS == "info":  # what claude-agent-acp 0.101.0 sends: a title, any time
                update = {"sessionUpdate": "session_info_update", "title": "earlier"}
            else:
                update = {"sessionUpdate": "agent_message_chunk",
                          "content": {"type": "text", "text": "not this one"}}
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": other, "update": update}})
    if step.reply.ok and req.method == "session_prompt":
        turns[req.sid] = turns.get(req.sid, 0) + 1
        if STRAY:
            update = {"sessionUpdate": "agent_message_chunk",
                      "content": {"type": "text", "text": "not yours"}}
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": "elsewhere", "update": update}})
    history = []
    if step.reply.replayed or (REPLAYS and step.reply.ok and req.method == "session_resume"):
        for _ in range(turns.get(req.sid, 0)):
            update = {"sessionUpdate": "agent_message_chunk",
                      "content": {"type": "text", "text": "earlier"}}
            history.append({"jsonrpc": "2.0", "method": "session/update",
                            "params": {"sessionId": req.sid, "update": update}})
    late = LATE
    if LATE_ODD and history:
        counter = Path(LATE_ODD)
        served = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(served))
        late = served % 2 == 1
    for note in [] if late else history:
        send(note)
    answer = _response(0, ReplayedStep(step, ()), wire)
    answer["id"] = msg["id"]
    if NULL_LOAD and msg["method"] == "session/load" and "result" in answer:
        answer["result"] = None
    if ECHO and msg["method"] == "initialize" and "result" in answer:
        answer["result"]["protocolVersion"] = msg["params"]["protocolVersion"]
    if SAME_ID and "sessionId" in answer.get("result", {}):  # every new session is "s1"
        answer["result"]["sessionId"] = "s1"
    answer.get("result", {}).pop("_meta", None) if isinstance(answer.get("result"), dict) else None
    store.write_bytes(pickle.dumps((world, turns)))
    send(answer)
    for note in history if late else []:
        send(note)
"""

FULL = (
    "Caps(system_prompt=PromptCap.OVERRIDE, load_session=True, resume=True, fork=True, "
    "close=True, delete=True, list=True)"
)


def model_agent(
    tmp_path: Path,
    revision: str = "v1-stable",
    mutant: str = "none",
    introspect: bool | str = True,
    caps: str = FULL,
    store: str | None = None,
) -> list[str]:
    """The model agent's command; its store ``tmp_path/store.pickle``, or ``store`` (say
    ``{store}/store.pickle``: a store per test, for tests run side by side)."""
    script = tmp_path / "model_agent.py"
    script.write_text(
        "from model.types import Caps, PromptCap\n"
        + MODEL_AGENT.replace("caps = eval(sys.argv[5])", f"caps = {caps}"),
        encoding="utf-8",
    )
    return [
        sys.executable,
        str(script),
        revision,
        store or str(tmp_path / "store.pickle"),
        mutant,
        introspect if isinstance(introspect, str) else "yes" if introspect else "no",
    ]


def _env_argv(argv: list[str]) -> list[str]:
    """Run the agent with this checkout on its path (the tests' cwd may be elsewhere)."""
    return ["env", f"PYTHONPATH={ROOT}", *argv]


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (psutil-free: /proc)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _script(tmp_path: Path, name: str, body: str) -> list[str]:
    p = tmp_path / f"{name}.py"
    p.write_text(textwrap.dedent(body), encoding="utf-8")
    return [sys.executable, str(p)]


_INIT_OK = textwrap.dedent("""
    import json, sys
    caps = {"loadSession": False, "sessionCapabilities": {}}
    def answer(msg):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
            "result": {"protocolVersion": 1, "agentCapabilities": caps}}) + "\\n")
        sys.stdout.flush()
""")

BAD_AGENTS = {
    "hang": ("import time\ntime.sleep(60)\n", "timeout"),
    "crash": ("import sys\nsys.stdin.readline()\nsys.exit(3)\n", "exited with code 3 (crash)"),
    "garbage": (
        "import sys, time\nsys.stdin.readline()\nprint('hello, I am not JSON', flush=True)\n"
        "time.sleep(60)\n",
        "non-JSON on stdout",
    ),
    "flood": (
        "import sys\nsys.stdin.readline()\nwhile True:\n    sys.stderr.write('x' * 65536)\n",
        "stderr flood",
    ),
    "closes-stdout": (
        "import os, sys, time\nsys.stdin.readline()\nos.close(1)\ntime.sleep(60)\n",
        "closed its stdout",
    ),
    # answers initialize, then hangs on the first session request: the per-test watchdog
    "stalls-later": (
        _INIT_OK + "\nmsg = json.loads(sys.stdin.readline())\nanswer(msg)\n"
        "for line in sys.stdin:\n    msg = json.loads(line)\n"
        "    if msg.get('method') == 'initialize':\n        answer(msg)\n"
        "    else:\n        import time; time.sleep(60)\n",
        "timeout",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_AGENTS))
def test_a_misbehaving_agent_fails_naming_the_cause_and_leaves_no_process(
    tmp_path: Path, name: str
) -> None:
    body, cause = BAD_AGENTS[name]
    argv = _script(tmp_path, name, body)
    only = ["ROW-connection.17"] if name == "stalls-later" else None  # one test, not all
    timeout = 0.5 if name == "hang" else 1.0
    report = conform(
        argv,
        revision="rfd-final",
        timeout=timeout,
        test_timeout=3.0,
        stderr_limit=1 << 20,
        only=only,
        coverage=False,  # the rows plan is enough to meet each misbehaviour
    )
    assert not report.conformant and report.exit_code() == 1
    failures = [o["message"] for r in report.requirements().values() for o in r["outcomes"]]
    text = report.startup_failure or " ".join(failures)
    assert cause in text, text
    pids = [pid for run in report.runs for pid in run.pids]
    assert all(not alive(pid) for pid in pids)
    assert "VERDICT: NOT CONFORMANT" in render(report)


def test_the_watchdog_ends_a_test_that_keeps_the_agent_busy(tmp_path: Path) -> None:
    """Each answer in time, yet the whole test too slow: the per-test watchdog names it."""
    body = _INIT_OK + (
        "\nimport time\nfor line in sys.stdin:\n    msg = json.loads(line)\n"
        "    time.sleep(0.4)\n"
        "    if msg.get('method') == 'initialize':\n        answer(msg)\n"
        "    else:\n        sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': msg['id'],"
        " 'error': {'code': -32601, 'message': 'no'}}) + '\\n'); sys.stdout.flush()\n"
    )
    argv = _script(tmp_path, "slow", body)
    only = ["ROW-connection.10"]
    report = conform(argv, revision="rfd-final", timeout=2.0, test_timeout=0.3, only=only)
    msgs = [o["message"] for r in report.requirements().values() for o in r["outcomes"]]
    assert any("watchdog" in m for m in msgs), msgs
    assert all(not alive(pid) for run in report.runs for pid in run.pids)


def test_caps_read_back_from_every_wire() -> None:
    for wire in ("blocks", "envelope", "instructions"):
        for cap in (PromptCap.NONE, PromptCap.APPEND, PromptCap.OVERRIDE):
            c = Caps(system_prompt=cap, load_session=True, fork=True, list=True)
            assert caps_of({"agentCapabilities": _agent_capabilities(c, wire)}, wire) == c
    # the string wire shows no capability: the agent is what the run assumes
    shown = {"agentCapabilities": _agent_capabilities(Caps(PromptCap.APPEND), "string")}
    assert caps_of(shown, "string", PromptCap.NONE) == Caps(PromptCap.NONE)
    assert caps_of(shown, "string") == Caps(PromptCap.APPEND)


def test_tiers_follow_the_registry() -> None:
    assert tier("S6") == MANDATORY  # an agent MUST
    assert tier("T13") == CAPABILITY  # an advertising agent MUST
    assert tier("A2") == MANDATORY  # a MUST about the protocol, carried out by the agent
    assert tier("T15") == MANDATORY  # MAY (either): no third answer
    assert tier("T11") == CAPABILITY  # MAY, on an advertising agent
    assert tier("R21") == CAPABILITY  # a default of the capability's field
    assert tier("T12") == ADVISORY  # SHOULD
    descriptive = ("R18", "R20", "T14", "T16", "A8", "A18", "T7")
    assert {tier(r) for r in descriptive} == {ADVISORY}
    opt_in = ("R1", "R2", "T1", "P1", "P6", "R3", "R22", "ROW-session.9")
    assert {tier(r) for r in opt_in} == {INFORMATIONAL}


def _v1_steps(*reqs: Request) -> list[Step]:
    """The v1-stable reference's steps for a conforming client's ``reqs`` after initialize."""
    system = System(REVISIONS["v1-stable"].tables)
    w = initial_world(default_caps("envelope"))
    steps = []
    for req in (Request("connect", client=ClientKind.CONFORMING), Request("initialize"), *reqs):
        steps.append(system.step(w, req))
        w = steps[-1].after
    return steps


def test_a_choice_passes_on_an_option_and_fails_past_them() -> None:
    """T15 (MAY either) and T16 (silent): an answer some option's build gives (the profile
    knobs on_load, fork_inherits, on_differ, ...) passes, naming it; any other fails."""
    options = choice_options("v1-stable")
    assert [o.label for o in options["T15"]] == [
        "the reference's",
        'on_load = "default"',
        "fork_inherits = false",
    ]
    assert [o.label for o in options["T16"]][1:] == ['on_differ = "keep"', 'on_differ = "reject"']
    new = Request("session_new", system_prompt=text("a"), mode="append")
    close = Request("session_close", sid="s1")
    omitted = _v1_steps(new, close, Request("session_load", sid="s1"))[-1]
    assert omitted.reply.ok and omitted.rows[-1][0] == "session"
    picks = {
        slot: judge_departure("v1-stable", "T15", omitted, Seen(None, slot), "m")
        for slot in ((BASE, "a"), (BASE,), ())
    }
    assert picks[(BASE, "a")] == (PASS, "the agent chose (the reference's): m")
    assert picks[(BASE,)] == (PASS, 'the agent chose (on_load = "default"): m')
    assert picks[()][0] == FAIL and "no option of T15" in picks[()][1]
    differ = Request("session_load", sid="s1", system_prompt=text("b"), mode="append")
    resent = _v1_steps(new, close, differ)[-1]
    assert chosen("v1-stable", "T16", resent, Seen(-32602)).label == 'on_differ = "reject"'
    assert chosen("v1-stable", "T16", resent, Seen(None, (BASE, "a"))).label == (
        'on_differ = "keep"'
    )
    assert chosen("v1-stable", "T16", resent, Seen(None, (BASE,))) is None
    assert chosen("v1-stable", "T16", resent, Seen(-32603)) is None  # another code: no option


def reference(revision: str, *extra: str) -> list[str]:
    """The reference agent (``python -m simulations.agent``), its store a scratch dir per run."""
    argv = [sys.executable, "-m", "simulations.agent", "--revision", revision]
    return [*argv, "--store", "{store}", *extra]


def test_the_reference_agent_conforms_on_rfd_final() -> None:
    """Restore, inheritance, composition and rejection tests, a list after a delete and a load
    after a restart (11 of the 33; the whole suite, exit 0 on every revision, is
    bench/conform_bench.py): exit 0, every MANDATORY id PASS."""
    only = ["R16", "R17", "W10", "W4", "R9", "R7", "R15"]
    argv = reference("rfd-final")
    report = conform(argv, revision="rfd-final", cwd=str(ROOT), timeout=5, only=only, jobs=2)
    reqs = report.requirements()
    failed = {k: v["outcomes"][:1] for k, v in reqs.items() if v["status"] == FAIL}
    assert report.conformant and report.exit_code() == 0, failed
    assert report.introspection is True and len(report.runs) >= 10
    assert all(r["status"] == PASS for r in reqs.values() if r["tier"] == MANDATORY)
    for rid in ("R16", "R17", "R9", "R7", "R15"):
        assert reqs[rid]["status"] == PASS, rid


def test_the_reference_agent_conforms_on_v1_stable() -> None:
    """The tests of load and resume with history, list after delete and override (the whole
    suite: bench/conform_bench.py)."""
    only = ["ROW-session.7", "ROW-session.17", "W10", "ROW-new_session.9", "VERSION"]
    report = conform(reference("v1-stable"), cwd=str(ROOT), timeout=5, only=only, jobs=2)
    reqs = report.requirements()
    assert report.conformant and report.exit_code() == 0
    assert all(r["status"] == PASS for r in reqs.values() if r["tier"] == MANDATORY)
    assert reqs["T13"]["status"] == PASS
    assert reqs["VERSION"]["status"] == PASS  # it names version 1, not the one asked for


# Faulty builds by profile knob: each fails the id its departure breaks; --only keeps each to
# the tests that reach it. (Every agent-side mutant: the kill matrix below.)
BUILDS = [
    ("v1-stable", {"override_mode": "append"}, "T13", ["ROW-new_session.9"]),
    ("v1-stable", {"text_blocks": "reject"}, "T8", ["ROW-new_session.10"]),
    ("v1-stable", {"unsupported_blocks": "drop"}, "T9", ["ROW-new_session.4"]),
    # the over-limit text is sent only with big=True (the literal "big", a test-mode symbol)
    ("rfd-final", {"size_limit": "drop"}, "R11", ["ROW-new_session.7"]),
]


@pytest.mark.parametrize(
    ("revision", "knobs", "rid", "only"), BUILDS, ids=[next(iter(b[1])) for b in BUILDS]
)
def test_a_faulty_build_of_the_reference_agent_fails_its_id(
    tmp_path: Path, revision: str, knobs: dict[str, str], rid: str, only: list[str]
) -> None:
    profile = tmp_path / "faulty.toml"
    lines = ['name = "faulty"', f'revision = "{revision}"']
    lines += [f'{k} = "{v}"' for k, v in knobs.items()]
    profile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = reference(revision, "--profile", str(profile))
    big = "size_limit" in knobs
    report = conform(argv, revision=revision, cwd=str(ROOT), timeout=5, only=only, big=big)
    reqs = report.requirements()
    assert reqs[rid]["status"] == FAIL, {k: v["status"] for k, v in reqs.items()}
    assert report.exit_code() == 1
    assert all(not alive(pid) for run in report.runs for pid in run.pids)


# The live kill matrix: the reference agent built as each agent-side mutant (model.mutants)
# runs that mutant's test (--only M:<name>: its shortest counterexample within the live
# bound) and fails the id the mutant declares. What the build needs to show it comes from the
# domain (``kill_setup``): the over-limit text (R11, T9: sent only with big=True, the literal
# "big" that only a test-mode agent takes as over its limit) and, where an unadvertised mode
# is the fault (R15, A6), the capability profile of the mutant's own shortest counterexample.
# An id whose tier is ADVISORY or INFORMATIONAL (R20, T12, T14, T16, A8, R18, A18, P1) fails
# at that tier and, by the kit's verdict rule, the run exits 0 unless a MANDATORY or
# CAPABILITY id fails beside it.
AGENT_MUTANTS = agent_mutants()
BLOCKING = (MANDATORY, CAPABILITY)


def test_the_kill_matrix_covers_every_agent_side_mutant() -> None:
    """Every mutant is on one side: the agent's (its client table the revision's, judged by
    the kill matrix) or the client's (named so); a new mutant needs no count changed here."""
    client_names = ("client_", "v1_client_", "alt_client_")
    assert AGENT_MUTANTS and all(
        MUTANTS[m].tables.client == REVISIONS[MUTANTS[m].revision].tables.client
        and not m.startswith(client_names)
        for m in AGENT_MUTANTS
    )
    client_side = [m for m in MUTANTS if m not in AGENT_MUTANTS]
    assert client_side and all(m.startswith(client_names) for m in client_side)


@pytest.mark.parametrize("name", AGENT_MUTANTS)
def test_the_reference_agent_built_as_each_agent_side_mutant_fails_its_id(name: str) -> None:
    m = MUTANTS[name]
    caps = default_caps(revision_wire(m.revision))
    setup = kill_setup(name, caps)
    if setup is None:
        # a fault only a second connection to the same agent shows (stdio is one): the
        # mutant's shortest counterexample in the default bound (its SHARED scope) needs one
        shortest = mutant_path(name, bound_for("default", m.revision, "same"))
        assert shortest is not None and any(r.conn == 1 for r in shortest.requests)
        # the one exception (docs/conform.md, "Mutants, witnesses and the reopen matrix")
        assert name == "error_still_detaches"
        return
    shown, big = setup
    extra = ["--mutant", name] + ([] if shown == caps else ["--caps", caps_text(shown)])
    only = [f"M:{name}"]
    report = conform(
        reference(m.revision, *extra),
        revision=m.revision,
        cwd=str(ROOT),
        timeout=5,
        test_timeout=5,
        only=only,
        big=big,
    )
    reqs = report.requirements()
    statuses = {k: (v["tier"], v["status"]) for k, v in reqs.items() if v["status"] != "SKIPPED"}
    assert len(report.runs) == 1, statuses
    assert reqs[m.violates]["status"] == FAIL, statuses
    assert reqs[m.violates]["tier"] == tier(m.violates)
    # one process per start: the probe's runs the test (and a restart starts another)
    restarts = sum(r.method == "restart" for r in report.runs[0].test.trace.requests)
    assert len(report.runs[0].pids) == 1 + restarts
    blocking = [k for k, v in reqs.items() if v["status"] == FAIL and v["tier"] in BLOCKING]
    if tier(m.violates) in BLOCKING:
        assert m.violates in blocking and report.exit_code() == 1
    else:  # the kit's verdict rule: only a MANDATORY or CAPABILITY failure makes exit 1
        assert report.exit_code() == (1 if blocking else 0), statuses
    assert all(not alive(pid) for run in report.runs for pid in run.pids)


@pytest.mark.parametrize("introspect", [False, "sdk", "null"])
def test_without_introspection_slot_checks_are_not_observable(
    tmp_path: Path, introspect: bool | str
) -> None:
    """-32601, and (issue 27) a result without ``systemSlot``, the official SDK's answer to
    an extension method it has no handler for (``{"example": "response"}`` or null), mean the
    extension is not there: the slot checks are not observable, not failed."""
    argv = _env_argv(model_agent(tmp_path, introspect=introspect))
    report = conform(argv, timeout=5, test_timeout=20, only=["ROW-new_session.9"])
    reqs = report.requirements()
    assert report.introspection is False
    assert reqs["T13"]["status"] == NOT_OBSERVABLE
    assert not [k for k, v in reqs.items() if v["status"] == FAIL]


def test_an_agent_that_hands_out_one_id_twice_on_one_connection_fails_s6(tmp_path: Path) -> None:
    """Issue 27: the plan has two session/new on one connection (no shortest path does), so an
    agent that answers both with the same sessionId fails S6, a MANDATORY id; it passed."""
    argv = ["env", "MODEL_AGENT_SAME_ID=1", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["S6-twice"])
    reqs = report.requirements()
    assert reqs["S6"]["status"] == FAIL, reqs["S6"]
    assert any("handed out twice" in o["message"] for o in reqs["S6"]["outcomes"])
    assert report.exit_code() == 1
    (run,) = report.runs
    assert [r.method for r in run.test.trace.requests].count("session_new") == 2


def test_an_agent_that_takes_no_session_fails_liveness_once_and_the_run_ends(
    tmp_path: Path,
) -> None:
    """Issue 27: an agent that answers initialize and never session/new fails LIVENESS (every
    request gets a response), not S6 or the rows of the step it hung on, and the run ends at
    the first such test, in one line, instead of waiting out every other test's timeout."""
    argv = ["env", "MODEL_AGENT_HANG=session/new", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=1, test_timeout=20, coverage=False)
    reqs = report.requirements()
    assert reqs["LIVENESS"]["status"] == FAIL and reqs["LIVENESS"]["tier"] == "MANDATORY"
    assert reqs["S6"]["status"] != FAIL
    assert report.startup_failure is not None and "session/new" in report.startup_failure
    assert len(report.runs) < len(report.planned) / 2
    assert report.exit_code() == 1


def test_a_resume_the_agent_serves_and_the_model_refuses_is_held_to_s8(tmp_path: Path) -> None:
    """Issue 27: the model refuses a resume of a deleted session; an agent that serves it
    breaks that row, and what it then does is still judged: history replayed before a
    resume's answer fails S8 (it passed)."""
    argv = ["env", "MODEL_AGENT_TAKEOVER=1", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["ROW-session.19"])
    reqs = report.requirements()
    assert reqs["S8"]["status"] == FAIL, reqs["S8"]
    said = reqs["S8"]["outcomes"][0]["message"]
    assert "session/update(s) of its history before the session/resume answer" in said


def test_s8_evidence_names_the_load_answered_without_its_history(tmp_path: Path) -> None:
    """Issue 44: S8's evidence is the load whose answer came before any of its history (the
    kit's history-after-load-answer agent): its step, its session and what was missing — not
    another message of the test (validate quoted a -32602 the same answer had noted)."""
    argv = ["env", "MODEL_AGENT_LATE=1", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["ROW-session.7"])
    s8 = report.requirements()["S8"]
    failed = [o for o in s8["outcomes"] if o["status"] == FAIL]
    assert s8["status"] == FAIL and failed, s8
    message, props = failed[0]["message"], failed[0]["properties"]
    assert message.startswith("step ") and " session/load: " in message, message
    assert "no session/update before the session/load answer" in message, message
    assert isinstance(props.get("sessionId"), str) and props["sessionId"], props


# Issue 27, item 3: the official kit's broken fixture agents, as switches of the model agent
# above, each with the tests that reach its fault and the verdict conform gives (the kill
# matrix of the base protocol; docs/conform.md, "The base protocol's kill matrix"). Switches
# pinned by their own tests below:
# SAME_ID (S6), HANG (LIVENESS), MISSING (a broken advertised method), STRAY (UPDATE-ID),
# NULL_LOAD (LOAD-NULL), ECHO (VERSION), NULLS (requests a client may not send).
KIT_FAULTS = [
    ("conforming", [], ["ROW-session.7", "ROW-session.17"], {"S8": PASS}, True),
    ("history-after-load-answer", ["MODEL_AGENT_LATE=1"], ["ROW-session.7"], {"S8": FAIL}, False),
    ("resume-replays", ["MODEL_AGENT_REPLAYS=1"], ["ROW-session.17"], {"S8": FAIL}, False),
    ("answers-bad-json", [], ["PARSE"], {"PARSE": PASS}, True),
    ("silent-on-bad-json", ["MODEL_AGENT_PARSE=silent"], ["PARSE"], {"PARSE": PASS}, True),
    # advisory, as the kit's ACP-JSONRPC-005: the verdict does not follow it
    ("crashes-on-bad-json", ["MODEL_AGENT_PARSE=crash"], ["PARSE"], {"PARSE": FAIL}, True),
]


@pytest.mark.parametrize(
    ("name", "env", "only", "verdicts", "conformant"), KIT_FAULTS, ids=[f[0] for f in KIT_FAULTS]
)
def test_kit_shaped_fixture_agents_get_the_pinned_verdict(
    tmp_path: Path,
    name: str,
    env: list[str],
    only: list[str],
    verdicts: dict[str, str],
    conformant: bool,
) -> None:
    report = conform(
        ["env", *env, *_env_argv(model_agent(tmp_path))], timeout=5, test_timeout=20, only=only
    )
    reqs = report.requirements()
    assert {rid: reqs[rid]["status"] for rid in verdicts} == verdicts, name
    assert report.conformant is conformant, name


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("", "answered it -32700 (id null), then gave session/new a result"),
        ("silent", "did not answer it"),
        ("no-id", "answered it -32700 with no id member (JSON-RPC 2.0 wants id null)"),
        ("crash", "the agent served nothing more: the agent exited with code 1 (crash)"),
    ],
)
def test_a_line_that_is_not_json_does_not_end_the_conversation(
    tmp_path: Path, mode: str, said: str
) -> None:
    """Issue 27, item 3 (the kit's crashes-on-bad-JSON fixtures, ACP-JSONRPC-005): after a
    line that is not JSON the agent must still serve session/new; whether it answered the
    line -32700 is said, not judged. An agent that dies on it fails PARSE (ADVISORY, as in the
    kit), and its wire is kept; before, conform sent no such line and this passed unseen."""
    argv = ["env", f"MODEL_AGENT_PARSE={mode}", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["PARSE"])
    assert [r.test.name for r in report.runs] == ["PARSE"]
    reqs = report.requirements()
    assert reqs["PARSE"]["tier"] == ADVISORY
    assert said in reqs["PARSE"]["outcomes"][0]["message"]
    assert (reqs["PARSE"]["status"] == FAIL) is (mode == "crash")
    assert bool(report.runs[0].transcript) is (mode == "crash")


# Issue 43, item 2: a racy build (MODEL_AGENT_LATE_ODD: a load's history after its answer on
# the 1st, 3rd, 5th, ... load it serves, counted in a file across its processes: the same runs
# fail every time) beside a stable one (MODEL_AGENT_LATE), on the one test that reaches W12 (a
# load of a session with a turn: one served load per run of the plan).
def _racy(tmp_path: Path) -> list[str]:
    counter = tmp_path / "loads-served"
    return ["env", f"MODEL_AGENT_LATE_ODD={counter}", *_env_argv(model_agent(tmp_path))]


def test_one_run_cannot_tell_a_racy_fault_from_a_stable_one(tmp_path: Path) -> None:
    """Run once, the racy build fails S8 as a stable one would: nothing says it is unstable
    (what --repeat is for)."""
    report = conform(_racy(tmp_path), timeout=5, test_timeout=20, only=["W12"])
    s8 = report.requirements()["S8"]
    assert s8["status"] == FAIL and "runs" not in s8
    assert report.unstable() == {} and to_json(report)["unstable"] == {}
    assert "unstable" not in render(report) and report.exit_code() == 1


def test_repeat_reports_a_racy_fault_as_unstable_and_keeps_its_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``conform --repeat 3``: S8 fails in runs 1 and 3 and passes in run 2; the table, the
    JSON, --out's README and summary say S8 is unstable, FAIL in 2 of 3 runs; the first
    failing run's folder and every run's wire are kept; the progress counts 3 test runs; a
    FAIL in any run makes the exit 1, as before."""
    from simulations.cli import main

    out = tmp_path / "out"
    args = ["conform", "--repeat", "3", "--only", "W12", "--timeout", "5", "--out", str(out)]
    assert main([*args, "--", *_racy(tmp_path)]) == 1
    printed, progress = capsys.readouterr()
    assert f"  {'S8':18s} {FAIL:14s}  FAIL in 2 of 3 runs (unstable): step 5 " in printed
    said = "repeated: the plan ran 3 times; unstable: S8 (FAIL in 2 of 3 runs)"
    assert said in printed and "VERDICT: NOT CONFORMANT (S8)" in printed
    assert "plan: 1 tests, 6 requests, 0 restarts, each run 3 times (3 test runs)" in progress
    doc = json.loads((out / "report.json").read_text())
    assert doc["repeat"] == 3 and doc["unstable"] == {"S8": {"failed": 2, "runs": 3}}
    s8 = doc["requirements"]["S8"]
    assert s8["runs"] == [FAIL, PASS, FAIL]
    assert [(o["nodeid"], o["run"], o["status"]) for o in s8["outcomes"]] == [
        ("conform::W12", 1, FAIL),
        ("conform::W12+run2", 2, PASS),
        ("conform::W12+run3", 3, FAIL),
    ]
    # T15 is judged at the turn after the load: a run that stopped at the load never got there
    assert doc["requirements"]["T15"]["runs"] == [None, PASS, None]
    assert said in (out / "README.md").read_text() and said in (out / "summary.txt").read_text()
    folder = (out / "S8" / "README.md").read_text()
    assert folder.startswith("# S8: the first failing test, `W12` (run 1; FAIL in 2 of 3 runs")
    assert (out / "S8" / "live.ndjson").stat().st_size > 0
    wires = sorted(p.name for p in (out / "wire").iterdir())
    assert wires == ["W12+run2.ndjson", "W12+run3.ndjson", "W12.ndjson"]


def test_a_stable_fault_fails_in_every_run_and_is_not_unstable(tmp_path: Path) -> None:
    argv = ["env", "MODEL_AGENT_LATE=1", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["W12"], repeat=3)
    assert report.requirements()["S8"]["runs"] == [FAIL, FAIL, FAIL]
    assert report.unstable() == {} and to_json(report)["unstable"] == {}
    text = render(report)
    assert f"  {'S8':18s} {FAIL:14s}  FAIL in 3 of 3 runs: step 5 " in text
    assert "(unstable)" not in text
    assert "repeated: the plan ran 3 times; no id failed in some runs and passed in others" in text
    assert report.exit_code() == 1


@pytest.mark.parametrize("bad", ["0", "-2", "x"])
def test_a_bad_repeat_count_is_one_line_exit_2(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from simulations.cli import main

    assert main(["conform", "--repeat", bad, "--", "true"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("acp-sysprompt: error: argument --repeat: ") and "\n" not in err, err
    with pytest.raises(ConformError, match="argument --repeat: expected a whole number >= 1"):
        conform(["true"], repeat=0)


def test_a_null_load_result_is_advisory_as_the_kit_tiers_it(tmp_path: Path) -> None:
    """Issue 27: a served session/load answered ``result: null`` (the SDK's example agents do)
    is LOAD-NULL, ADVISORY as in the official kit, and not a MANDATORY SCHEMA FAIL (it was)."""
    argv = ["env", "MODEL_AGENT_NULL_LOAD=1", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["ROW-session.7"])
    reqs = report.requirements()
    assert reqs["LOAD-NULL"]["status"] == FAIL and reqs["LOAD-NULL"]["tier"] == ADVISORY
    assert reqs["SCHEMA"]["status"] == PASS
    assert report.conformant and report.exit_code() == 0


@pytest.mark.parametrize(("stray", "status"), [(False, PASS), (True, FAIL)])
def test_each_update_names_the_session_it_is_about(
    tmp_path: Path, stray: bool, status: str
) -> None:
    """Issue 27 (the kit's updates-for-another-session fixture): a turn's session/update that
    names another session fails UPDATE-ID (MANDATORY); an agent whose updates all name the
    prompted session passes it (before, nothing read the updates' session ids)."""
    env = ["MODEL_AGENT_STRAY=1"] if stray else []
    argv = ["env", *env, *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["W10"])
    reqs = report.requirements()
    assert reqs["UPDATE-ID"]["status"] == status and reqs["UPDATE-ID"]["tier"] == MANDATORY
    assert report.conformant is not stray
    if stray:
        assert "['elsewhere']" in reqs["UPDATE-ID"]["outcomes"][0]["message"]


@pytest.mark.parametrize(("kind", "status"), [("info", PASS), ("chunk", FAIL)])
def test_an_update_about_another_live_session_is_judged_by_its_kind(
    tmp_path: Path, kind: str, status: str
) -> None:
    """What two real agents showed on the coverage plan's pair scope (2026-12-03): while a
    session is answered, ``session_info_update`` (a title) for another session live on the
    connection is no stray update — an agent may send one at any time, and validate judges it
    so — but a turn's content for a session with no turn open is UPDATE-ID (before, every
    update naming another session failed it: both agents were NOT CONFORMANT for a title)."""
    # a store per test: two tests side by side (``jobs=2``) on one store file read each
    # other's half-written pickle (a CI run: the agent crashed at start, S8 and T13 FAILed)
    agent = model_agent(tmp_path, store="{store}/store.pickle")
    argv = ["env", f"MODEL_AGENT_OTHERS={kind}", *_env_argv(agent)]
    # the coverage tests alone (``--only COVER``): the pair scope is theirs, and the rows'
    # tests would add nothing here but time (82 tests, half the full tiny plan's CPU)
    report = conform(argv, timeout=30, test_timeout=120, jobs=2, bound="tiny", only=[COVER_TEST])
    reqs = report.requirements()
    assert reqs["UPDATE-ID"]["status"] == status, reqs["UPDATE-ID"]
    failing = {k: v["outcomes"][:1] for k, v in reqs.items() if v["status"] == FAIL}
    assert report.conformant is (status == PASS), failing
    if status == FAIL:
        failed = [o for o in reqs["UPDATE-ID"]["outcomes"] if o["status"] == FAIL]
        assert "while answering about" in failed[0]["message"]


@pytest.mark.parametrize(("echo", "status"), [(False, PASS), (True, FAIL)])
def test_version_negotiation_answers_with_a_version_the_agent_speaks(
    tmp_path: Path, echo: bool, status: str
) -> None:
    """Issue 27 (kit INIT-003): asked for a protocolVersion no ACP revision has, the agent
    must name one it supports; one that echoes the version asked for fails VERSION (ADVISORY
    here: the text describes the negotiation without a MUST; docs/conform.md, "Tiers, pseudo-ids
    and the verdict")."""
    env = ["MODEL_AGENT_ECHO=1"] if echo else []
    argv = ["env", *env, *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["VERSION"])
    reqs = report.requirements()
    assert [r.test.name for r in report.runs] == ["VERSION"]
    assert reqs["VERSION"]["status"] == status and reqs["VERSION"]["tier"] == "ADVISORY"
    assert ("echoed" in reqs["VERSION"]["outcomes"][0]["message"]) is echo
    assert report.exit_code() == 0  # advisory: the verdict does not follow it


def test_an_advertised_method_answered_as_missing_is_named_broken(tmp_path: Path) -> None:
    """Issue 27: an agent that advertises loadSession and answers every session/load -32601
    fails the ids that refusal breaks, and the finding says what happened: a method it
    advertised that it does not serve (before, only the ids, or S8 left NOT_TESTED)."""
    argv = ["env", "MODEL_AGENT_MISSING=session/load", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["ROW-session.7"])
    messages = [f.message for run in report.runs for f in run.findings if f.status == FAIL]
    assert messages and all("broken advertised method" in m for m in messages), messages
    assert all("agentCapabilities.loadSession" in m for m in messages)


NO_DELETE = FULL.replace("delete=True", "delete=False")


@pytest.mark.exhaustive  # ``small``: ``tiny`` has no path through a delete before initialize
@pytest.mark.parametrize("mutant", ["none", "v1_override_keeps_default"])
def test_another_error_code_the_agent_may_choose_does_not_end_the_test(
    tmp_path: Path, mutant: str
) -> None:
    """The official SDK answers -32601 for a method it has no route for (session/delete)
    before it checks initialization, where the model refuses with -32600: a choice, which
    ended every test through it, so what followed (a restart's reopen and its turn) was never
    reached (the faulty agents' twin: 869 of 873 situations on ``small``). An error the agent
    chose where the model's refusal changes nothing now lets the test go on: full coverage, and
    a fault after that step is still caught."""
    agent = model_agent(tmp_path, mutant=mutant, caps=NO_DELETE, store="{store}/store.pickle")
    argv = ["env", "MODEL_AGENT_MISSING=session/delete", *_env_argv(agent)]
    report = conform(argv, timeout=30, test_timeout=120, jobs=2, bound="small")
    chose = [
        f.message
        for run in report.runs
        for f in run.findings
        if "expected error -32600, got error -32601" in f.message
    ]
    assert chose, "no test sent session/delete where the model refuses it -32600"
    if mutant == "none":
        assert report.conformant, report.verdict()["failing"]
        assert report.coverage["run"] == report.coverage["total"], report.coverage
    else:
        assert not report.conformant and "T13" in report.verdict()["failing"]


def test_a_request_a_client_may_not_send_feeds_no_mandatory_id(tmp_path: Path) -> None:
    """Issue 27: a session method before initialize (S1) or one the agent did not advertise
    (S5) binds the client, not the agent. An agent that answers them ``result: null``, as the
    official SDK's example agents do, chose another answer than the model's rows (recorded,
    INFORMATIONAL) and fails no MANDATORY id: those answers are not held to the schema (they
    failed SCHEMA before)."""
    argv = ["env", "MODEL_AGENT_NULLS=1", *_env_argv(model_agent(tmp_path, caps="Caps()"))]
    rows = ["ROW-connection.8", "ROW-connection.15"]  # session/list before initialize; unadvertised
    report = conform(argv, timeout=5, test_timeout=20, only=rows)
    reqs = report.requirements()
    assert len(report.runs) == 2
    assert reqs["SCHEMA"]["status"] == PASS, reqs["SCHEMA"]
    for row in rows:
        assert reqs[row]["tier"] == "INFORMATIONAL"
        assert "the agent chose" in reqs[row]["outcomes"][0]["message"]
    assert not [k for k, v in reqs.items() if v["status"] == FAIL]
    assert report.exit_code() == 0


def test_report_json_counterexample_and_live_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line: the kit's JSON fields, a failure in the counterexample forms, and
    ``replay TRACE -- AGENT_CMD`` reproducing it against the faulty build, not the reference."""
    from simulations.cli import main

    out, cx = tmp_path / "r.json", tmp_path / "cx"
    faulty = _env_argv(reference("v1-stable", "--mutant", "v1_override_keeps_default"))
    only = ["--only", "ROW-new_session.9", "--timeout", "5"]
    code = main(["conform", "--report-json", str(out), "--out", str(cx), *only, "--", *faulty])
    printed = capsys.readouterr().out
    assert code == 1 and "VERDICT: NOT CONFORMANT" in printed
    data = json.loads(out.read_text())
    for key in ("agent_command", "agent_capabilities", "requirements", "verdict", "started_at"):
        assert key in data
    t13 = data["requirements"]["T13"]
    assert {"tier", "citation", "status", "outcomes"} <= t13.keys()
    failed = [o for o in t13["outcomes"] if o["status"] == FAIL]
    assert failed and "transcript" in failed[0] and "stderr" in failed[0]
    assert data["verdict"]["conformant"] is False
    for name in ("steps.md", "transcript.ndjson", "review.md", "trace.itf.json", "live.ndjson"):
        assert (cx / "T13" / name).is_file()
    trace = str(cx / "T13" / "trace.itf.json")
    assert main(["replay", trace, "--timeout", "5", "--", *faulty]) == 1
    assert "reproduced: " in capsys.readouterr().out
    assert main(["replay", trace, "--timeout", "5", "--", *_env_argv(reference("v1-stable"))]) == 0
    assert "not reproduced" in capsys.readouterr().out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    from simulations.cli import main

    for args in (
        ["conform"],
        ["conform", "--timeout", "0", "--", "x"],
        ["conform", "--revision", "nope", "--", "x"],
        ["conform", "--walks", "-1", "--", "x"],
        ["conform", "--only", "M:load_restores_defaults", "--", "x"],  # misspelt
        ["conform", "--only", "M:load_restores_default", "--", "x"],  # rfd-final's, not v1-stable's
        ["list", "--", "x"],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_stops_the_run_and_still_writes_the_report(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C (or SIGTERM) mid-run, as the first agent answers and later: exit 130, the
    verdict printed and the report of the tests that ran written, no agent process left.
    (Where the signal lands does not decide it: tests/test_conform_results.py sends it at
    each moment of a run on purpose.)"""
    body = _INIT_OK + (
        "\nimport time\nfor line in sys.stdin:\n    msg = json.loads(line)\n"
        "    time.sleep(0.2)\n"
        "    if msg.get('method') == 'initialize':\n        answer(msg)\n"
        "    else:\n        sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': msg['id'],"
        " 'error': {'code': -32601, 'message': 'no'}}) + '\\n'); sys.stdout.flush()\n"
    )
    script = _script(tmp_path, "slow_agent", body)
    for later in (0.0, 0.6):
        out = tmp_path / f"r{later}.json"
        cmd = [sys.executable, "-m", "simulations", "conform", "--revision", "rfd-final"]
        cmd += ["--report-json", str(out), "--", *script]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not _agents_of(script[1]):
                time.sleep(0.02)  # the probe (or a first test) is running
            time.sleep(later)
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 130, (later, stdout[-400:], stderr[-2000:])
        assert b"interrupted" in stdout and b"VERDICT:" in stdout and out.is_file()
        assert json.loads(out.read_text())["interrupted"] is True
        assert _agents_of(script[1]) == []


def _agents_of(script: str) -> list[int]:
    """Live processes running ``script`` (``python SCRIPT``; psutil-free: /proc)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmdline = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline[1:2] == [script.encode()] and alive(int(d.name)):
                pids.append(int(d.name))
    return pids


_REFUSES_ALL = _INIT_OK + (
    "\nfor line in sys.stdin:\n    msg = json.loads(line)\n"
    "    if msg.get('method') == 'initialize':\n        answer(msg)\n"
    "    else:\n        sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': msg['id'],"
    " 'error': {'code': -32601, 'message': 'no'}}) + '\\n'); sys.stdout.flush()\n"
)


def test_random_walks_find_and_shrink_a_departure(tmp_path: Path) -> None:
    """An agent that refuses every session method: a walk fails, Hypothesis shrinks it, and
    the one failing walk reported is short."""
    argv = _script(tmp_path, "refuses", _REFUSES_ALL)
    report = conform(argv, revision="rfd-final", timeout=2, only=["-"], walks=3, steps=4, seed=4)
    walks = [r for r in report.runs if r.test.name.startswith("walk-")]
    failing = [r for r in walks if r.failed]
    assert report.planned == [] and walks and len(failing) == 1
    assert len(failing[0].test.trace.requests) <= 3  # connect, initialize, one refused request
    assert report.exit_code() == 1


def test_a_malformed_answer_fails_the_schema_and_is_written_out(tmp_path: Path) -> None:
    body = _REFUSES_ALL.replace('"loadSession": False', '"loadSession": "yes"')
    argv = _script(tmp_path, "malformed", body)
    report = conform(argv, revision="rfd-final", timeout=2, only=["ROW-connection.17"])
    schema = report.requirements()["SCHEMA"]
    assert schema["status"] == FAIL and "loadSession" in schema["outcomes"][0]["message"]
    written = write_counterexamples(report, tmp_path / "cx")
    assert "SCHEMA" in written
    for name in ("steps.md", "review.md", "live.ndjson", "stderr.txt"):
        assert (written["SCHEMA"] / name).is_file()


def test_an_agent_that_ignores_sigterm_and_its_child_are_killed(tmp_path: Path) -> None:
    """The stop ladder ends in SIGKILL to the whole process group: a wrapper's child too."""
    marker = str(tmp_path / "child-marker")
    body = f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", {marker!r}])
        time.sleep(60)
    """
    argv = _script(tmp_path, "stubborn", body)
    report = conform(argv, revision="rfd-final", timeout=0.5, test_timeout=3.0)
    assert report.startup_failure is not None and "timeout" in report.startup_failure
    time.sleep(0.1)
    assert _agents_of(argv[1]) == []
    children = [d for d in Path("/proc").iterdir() if d.name.isdigit() and _cmdline_has(d, marker)]
    assert [d for d in children if alive(int(d.name))] == []


def _cmdline_has(d: Path, text: str) -> bool:
    try:
        return text.encode() in (d / "cmdline").read_bytes()
    except OSError:
        return False


def test_a_cancelled_run_is_not_swallowed_while_an_agent_is_reaped() -> None:
    """Ctrl-C cancels the run's task; if it lands while the transport waits for a task it has
    cancelled itself (the agent's stderr reader in ``stop``), the cancellation goes on — the
    run must not carry on as if nothing had been asked (it once did: exit 1 instead of 130)."""
    import asyncio

    from simulations.live.process.transport import _reap

    async def slow_to_die() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # cleanup, while the run is interrupted
            raise

    async def run() -> str:
        inner = asyncio.ensure_future(slow_to_die())
        await asyncio.sleep(0)
        inner.cancel()
        await _reap(inner)
        return "went on"

    async def main() -> str:
        outer = asyncio.ensure_future(run())
        await asyncio.sleep(0.05)
        outer.cancel()
        try:
            return await outer
        except asyncio.CancelledError:
            return "cancelled"

    assert asyncio.run(main()) == "cancelled"

    async def alone() -> str:  # the cancelled future's own CancelledError stays quiet
        inner = asyncio.ensure_future(asyncio.sleep(10))
        await asyncio.sleep(0)
        inner.cancel()
        await _reap(inner)
        return "went on"

    assert asyncio.run(alone()) == "went on"


# ---- through a model endpoint (issue 28, items 1 and 5) ----------------------------------------

ENDPOINT_ARGS = ["--model-endpoint", "{endpoint}"]


@pytest.mark.parametrize(
    ("revision", "only"),
    [
        ("v1-stable", ["ROW-session.7", "ROW-session.17", "W4", "ROW-new_session.9", "T16"]),
        ("rfd-final", ["R16", "R17", "W4", "R9", "R7"]),
        ("v2-draft", ["T15", "T16", "W4"]),
    ],
)
def test_the_reference_agent_conforms_through_the_model_endpoint(
    revision: str, only: list[str]
) -> None:
    """conform reads each turn's slot from the agent's model calls: the reference agent in its
    --model-endpoint mode conforms; its own text is learnt before the plan; every attach is
    followed by a turn that shows its slot (none left unobserved); the slot checks are the
    endpoint's (their messages name the model call), and its introspection answer agrees."""
    argv = reference(revision, *ENDPOINT_ARGS)
    report = conform(
        argv, revision=revision, cwd=str(ROOT), timeout=5, only=only, jobs=2, model_endpoint=True
    )
    reqs = report.requirements()
    failed = {k: v["outcomes"][:1] for k, v in reqs.items() if v["status"] == FAIL}
    assert report.conformant and report.exit_code() == 0, failed
    assert report.introspection is True and report.model_calls > len(report.runs)
    assert report.requirements()["SLOT-AGREE"]["status"] == PASS  # both read, one slot
    assert report.base_lines == 3 and report.calibration == (
        "learnt from 3 turns of sessions without a client prompt in two working directories; "
        "none of its 3 lines is context"
    )
    messages = [f.message for run in report.runs for f in run.findings]
    assert any("(seen in the model call of step" in m for m in messages)
    assert not [f for run in report.runs for f in run.findings if f.status == NOT_OBSERVABLE]
    assert report.endpoint is not None and report.endpoint.startswith("http://127.0.0.1:")
    assert "model endpoint http://127.0.0.1:" in render(report)


# ids judged by the agent's answers (an error or not, the ids handed out or listed, history
# replayed), not by a slot: through the endpoint they go the same way as through the extension
# (the matrix above), so their runs through it are in ``make exhaustive``
ANSWER_IDS = frozenset(
    {"R4", "R5", "R10", "R11", "R15", "S6", "S7", "S8", "P6", "T8", "T9", "T10", "A6", "A7"}
)
ENDPOINT_MATRIX = [
    pytest.param(m, marks=pytest.mark.exhaustive) if MUTANTS[m].violates in ANSWER_IDS else m
    for m in AGENT_MUTANTS
]


@pytest.mark.parametrize("name", ENDPOINT_MATRIX)
def test_each_agent_side_mutant_fails_its_id_through_the_model_endpoint(name: str) -> None:
    """The live kill matrix again, the slot read from the model calls alone: each build fails
    the id it declares, as through the extension — but ``blank_text_as_absent`` (R21), whose
    fault is an empty text left out, which adds nothing to what the model receives: it
    passes, and the finding says the empty text is not seen in a model call."""
    m = MUTANTS[name]
    setup = kill_setup(name, default_caps(revision_wire(m.revision)))
    if setup is None:
        return  # a second connection shows it: stdio has one (the test above)
    shown, big = setup
    caps = default_caps(revision_wire(m.revision))
    extra = ["--mutant", name] + ([] if shown == caps else ["--caps", caps_text(shown)])
    report = conform(
        reference(m.revision, *extra, *ENDPOINT_ARGS),
        revision=m.revision,
        cwd=str(ROOT),
        timeout=5,
        test_timeout=10,
        only=[f"M:{name}"],
        big=big,
        model_endpoint=True,
    )
    reqs = report.requirements()
    statuses = {k: v["status"] for k, v in reqs.items() if v["status"] != "SKIPPED"}
    if name == "blank_text_as_absent":
        assert statuses[m.violates] == PASS, statuses
        messages = [f.message for f in report.runs[0].findings]
        assert any("not seen in a model call: ['']" in x for x in messages), messages
        return
    assert statuses[m.violates] == FAIL, statuses
    assert all(not alive(pid) for run in report.runs for pid in run.pids)


def test_a_slot_too_long_to_keep_is_not_observable_never_a_verdict(monkeypatch) -> None:
    """A model call whose slot the endpoint kept only as head and tail (over ``TEXT_KEPT``)
    cannot show what its middle held: the build that FAILs append_drops_base's id through the
    endpoint gets NOT_OBSERVABLE there instead, never PASS, and the report counts the clipped
    calls (its text and its JSON)."""
    from simulations.live.endpoint import model_calls

    monkeypatch.setattr(model_calls, "TEXT_KEPT", 40)  # the reference agent's slot is longer
    m = MUTANTS["append_drops_base"]
    report = conform(
        reference(m.revision, "--mutant", m.name, *ENDPOINT_ARGS),
        revision=m.revision,
        cwd=str(ROOT),
        timeout=5,
        test_timeout=10,
        only=[f"M:{m.name}"],
        model_endpoint=True,
    )
    assert report.requirements()[m.violates]["status"] == NOT_OBSERVABLE
    notes = [f.message for run in report.runs for f in run.findings if f.status == NOT_OBSERVABLE]
    assert any("too long to keep whole" in n for n in notes), notes
    assert report.model_clipped > 0 and report.model_dropped == 0
    assert "with a text clipped" in render(report)
    assert to_json(report)["model_endpoint"]["clipped"] == report.model_clipped


@pytest.mark.parametrize(
    "name", ["load_restores_default", "append_drops_base", "v1_load_without_prompt_empties_slot"]
)
def test_the_endpoint_and_the_extension_fail_the_same_ids(name: str) -> None:
    """Where an agent has both, they agree: a build's failing ids are the same whether its
    slot is read from the introspection extension or from its model calls."""
    m = MUTANTS[name]
    failing = []
    for via_endpoint in (False, True):
        extra = ["--mutant", name, *(ENDPOINT_ARGS if via_endpoint else [])]
        report = conform(
            reference(m.revision, *extra),
            revision=m.revision,
            cwd=str(ROOT),
            timeout=5,
            test_timeout=10,
            only=[f"M:{name}"],
            model_endpoint=via_endpoint,
        )
        reqs = report.requirements()
        failing.append(sorted(k for k, v in reqs.items() if v["status"] == FAIL))
    assert failing[0] == failing[1] and m.violates in failing[0], failing
    # issue 29: the live wire keeps what each turn's model call carried; validate reads it
    # as slot evidence where nothing else shows the slot (the results' _meta and the
    # introspection answers taken out, as a real agent has neither)
    (failed,) = [o for o in reqs[m.violates]["outcomes"] if o["status"] == FAIL][:1]
    kept = [r for r in failed["transcript"] if INTROSPECTION_METHOD not in json.dumps(r)]
    for r in kept:
        result = r["message"].get("result")
        if isinstance(result, dict):
            result.pop("_meta", None)
    assert any(r["direction"] == "model" for r in kept)
    assert m.violates in validate_messages(kept, m.revision).violated
    bare = [r for r in kept if r["direction"] != "model"]
    assert m.violates not in validate_messages(bare, m.revision).violated


def test_conform_through_the_endpoint_needs_the_agent_told_where(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "simulations.agent"]
    with pytest.raises(ConformError, match=r"must name \{endpoint\}"):
        conform(argv, model_endpoint=True)
    # an agent that never calls the model: every slot check is not observable, said in one line
    quiet = ["env", "X={endpoint}", *reference("v1-stable")]
    report = conform(
        quiet, cwd=str(ROOT), timeout=5, only=["ROW-new_session.9"], model_endpoint=True
    )
    assert report.model_calls == 0
    assert report.calibration == "no model call carried the turn's prompt"
    seen = {f.status for run in report.runs for f in run.findings if f.rid == "T13"}
    assert seen == {NOT_OBSERVABLE}
    assert "the agent never called it: slots not observable" in render(report)


def test_a_store_that_loses_the_mode_across_a_restart_fails_on_the_reopen_matrix(
    tmp_path: Path,
) -> None:
    """Issue 28, item 6: the trial agent of the issue (its store keeps each prompt's text but
    every mode comes back as append after a restart) passed every test of the plan before:
    no shortest path restarts under override. The reopen matrix (a session in each advertised
    mode, a real restart, load or resume re-sending the prompt, a turn) fails it; the
    conforming build passes the same tests."""
    argv = ["env", "MODEL_AGENT_FORGET_MODES=1", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["REOPEN"])
    names = [r.test.name for r in report.runs]
    assert len(names) == 21 and all(n.startswith("REOPEN+") for n in names), names
    failing = {r.test.name: [f.rid for f in r.failed] for r in report.runs if r.failed}
    # a client that re-sends the prompt hides the loss (the agent takes the re-sent one); one
    # that does not re-send it gets the stored prompt back as append: no option of T15
    assert failing == {
        "REOPEN+load/override/restart/not-re-sent": ["P2", "P3", "T15"],
        "REOPEN+resume/override/restart/not-re-sent": ["P2", "P3", "T15"],
    }, failing
    reqs = report.requirements()
    assert reqs["T15"]["status"] == FAIL and not report.conformant
    failed = [o["message"] for o in reqs["T15"]["outcomes"] if o["status"] == FAIL]
    assert "system slot [BASE, a], the model's [a]" in failed[0], failed
    (tmp_path / "good").mkdir()
    good = conform(
        _env_argv(model_agent(tmp_path / "good")), timeout=5, test_timeout=20, only=["REOPEN"]
    )
    assert good.conformant and len(good.runs) == 21


def test_replay_reproduces_a_restart_failure_and_its_review_opens_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28, item 6: a failure conform found across a real restart (the build's store
    forgets prompts: R16/R18 on the load after it) is reproduced by ``replay … -- AGENT``,
    judged by what the agent advertises (before, by the trace's narrower profile: the replay
    stopped at initialize and said "not reproduced"); the reference is not. The failure's
    review opens with the failed id and shows the agent's answers beside the model's."""
    from simulations.cli import main

    cx = tmp_path / "cx"
    faulty = _env_argv(reference("rfd-final", "--mutant", "restart_forgets_prompts"))
    only = ["--only", "M:restart_forgets_prompts", "--timeout", "5", "--revision", "rfd-final"]
    assert main(["conform", "--out", str(cx), *only, "--", *faulty]) == 1
    capsys.readouterr()
    review = (cx / "R18" / "review.md").read_text()
    assert review.startswith("### R18 FAIL")
    assert "| the model answers | the agent answered |" in review
    assert "| 8 | `session/load(conn=0, sessionId=s1)` | ok, slot [BASE, a] |" in review
    assert "not reproduced" not in review
    trace = str(cx / "R18" / "trace.itf.json")
    assert main(["replay", trace, "--timeout", "5", "--", *faulty]) == 1
    assert "reproduced: R16, R18" in capsys.readouterr().out
    good = _env_argv(reference("rfd-final"))
    assert main(["replay", trace, "--timeout", "5", "--", *good]) == 0
    assert "not reproduced" in capsys.readouterr().out


def test_the_live_plan_takes_a_bound(tmp_path: Path) -> None:
    """Issue 28, item 6: ``conform --bound NAME|FILE`` picks the bound the plan's shortest
    paths come from (a named bound or a bound file); a bad one is one line before the run."""
    from simulations.engines.bounds import BOUNDS, bound_toml
    from simulations.live.conform.plan import plan

    tables, caps = REVISIONS["v1-stable"].tables, default_caps("envelope")
    sizes = {b: len(plan(tables, "v1-stable", caps, bound=b)) for b in ("tiny", "small")}
    assert sizes["tiny"] < sizes["small"], sizes
    path = tmp_path / "mine.toml"
    path.write_text(bound_toml(BOUNDS["tiny"]))
    assert len(plan(tables, "v1-stable", caps, bound=str(path))) == sizes["tiny"]
    with pytest.raises(ConformError, match="argument --bound: 'nosuch' is neither a shipped bound"):
        conform(["x"], bound="nosuch")


LYING = """
import json, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
asked = set()
def down():
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "_acp_sysprompt/system_slot":
            asked.add(json.dumps(msg["id"]))
        child.stdin.write(line.encode()); child.stdin.flush()
    child.stdin.close()
threading.Thread(target=down, daemon=True).start()
for raw in child.stdout:
    msg = json.loads(raw)
    if "method" not in msg and json.dumps(msg.get("id")) in asked and "result" in msg:
        msg["result"] = {"systemSlot": ["BASE"]}  # says the default, whatever the session has
    sys.stdout.write(json.dumps(msg) + "\\n"); sys.stdout.flush()
sys.exit(child.wait())
"""


@pytest.mark.parametrize("lies", [False, True])
def test_the_extension_and_the_model_call_must_agree(tmp_path: Path, lies: bool) -> None:
    """Issue 28, item 1: where an agent answers the introspection extension and calls the
    model endpoint, both are read at each turn and must show one slot (SLOT-AGREE, ADVISORY);
    an agent whose extension reports its default while the model gets the client's text
    fails it, and the endpoint's verdict stands (the slot checks pass)."""
    argv = reference("v1-stable", *ENDPOINT_ARGS)
    if lies:
        proxy = tmp_path / "lying.py"
        proxy.write_text(LYING)
        argv = [sys.executable, str(proxy), *argv]
    report = conform(
        argv, cwd=str(ROOT), timeout=5, only=["ROW-new_session.9"], model_endpoint=True
    )
    reqs = report.requirements()
    assert reqs["SLOT-AGREE"]["tier"] == ADVISORY
    assert reqs["SLOT-AGREE"]["status"] == (FAIL if lies else PASS), reqs["SLOT-AGREE"]
    assert reqs["T13"]["status"] == PASS and report.introspection is True
    if lies:
        failed = [o["message"] for o in reqs["SLOT-AGREE"]["outcomes"] if o["status"] == FAIL]
        assert "the extension says [BASE], the model call carried [a]" in failed[0]


def test_an_advertised_method_refused_every_time_is_a_mandatory_failure(tmp_path: Path) -> None:
    """Issue 39, item 3 (the official kit's LOAD-001): an agent that advertises loadSession and
    answers every session/load -32601 is NOT CONFORMANT through ADVERTISED (MANDATORY), not
    a choice row; the conforming build, asked the same, passes it."""
    argv = ["env", "MODEL_AGENT_MISSING=session/load", *_env_argv(model_agent(tmp_path))]
    report = conform(argv, timeout=5, test_timeout=20, only=["ROW-session.7"])
    reqs = report.requirements()
    assert reqs["ADVERTISED"]["tier"] == MANDATORY
    assert reqs["ADVERTISED"]["status"] == FAIL, reqs["ADVERTISED"]
    message = reqs["ADVERTISED"]["outcomes"][0]["message"]
    assert "agentCapabilities.loadSession was advertised, and every one" in message, message
    assert not report.conformant and "ADVERTISED" in report.verdict()["failing"]
    (tmp_path / "good").mkdir()
    good = conform(
        _env_argv(model_agent(tmp_path / "good")),
        timeout=5,
        test_timeout=20,
        only=["ROW-session.7"],
    )
    assert good.requirements()["ADVERTISED"]["status"] == PASS and good.conformant


def test_repeat_rows_runs_the_coverage_tests_once_and_judges_runs_on_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--repeat 3 --repeat-rows`` (what ``make real-agents`` runs): a coverage test runs in
    the first run alone, the rest of the plan in all three; the stable fault fails S8 in each
    run, judged on the tests every run ran, and is not unstable. (The plan is W12's test and a
    copy of it named as a coverage test: the whole coverage plan is minutes of tests.)"""
    import simulations.live.conform.conform as live

    chosen = live.select

    def with_a_cover_test(tests: Any, only: Any, tables: Any, revision: str) -> Any:
        picked = chosen(tests, only, tables, revision)
        return [*picked, LiveTest("COVER+1", picked[0].trace, ())]

    monkeypatch.setattr(live, "select", with_a_cover_test)
    argv = ["env", "MODEL_AGENT_LATE=1", *_env_argv(model_agent(tmp_path))]
    kw: dict[str, Any] = {"timeout": 5, "test_timeout": 20, "only": ["W12"]}
    report = conform(argv, repeat=3, repeat_rows=True, **kw)
    names = [r.name for r in report.runs if r.test.name in ("W12", "COVER+1")]
    assert names == ["W12", "COVER+1", "W12+run2", "W12+run3"], names
    s8 = report.requirements()["S8"]
    assert s8["runs"] == [FAIL, FAIL, FAIL] and len(s8["outcomes"]) == 4
    assert report.unstable() == {} and to_json(report)["repeat_rows"] is True
    assert "(its coverage tests once: ids judged unstable on the other tests)" in render(report)


def test_repeat_rows_compares_runs_on_the_tests_each_ran() -> None:
    """An id judged FAIL by a coverage test in the first run and PASS by the rows tests of every
    run is no unstable id with ``--repeat-rows`` (the runs differ in their tests, not in the
    agent); without it the same outcomes would read as FAIL in 1 of 3 runs."""
    from simulations.live.conform.report import per_run

    outcomes = [
        {"nodeid": "conform::COVER+4", "run": 1, "status": FAIL},
        {"nodeid": "conform::W12", "run": 1, "status": PASS},
        {"nodeid": "conform::W12+run2", "run": 2, "status": PASS},
        {"nodeid": "conform::W12+run3", "run": 3, "status": PASS},
    ]
    assert per_run(outcomes, 3, rows_only=True) == [PASS, PASS, PASS]
    assert per_run(outcomes, 3) == [FAIL, PASS, PASS]
