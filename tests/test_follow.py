"""Issue 39, item 5: a test follows an agent past a choice the spec leaves it. Where the agent
takes another option (T16: keep a different re-sent prompt, not apply it), the test goes on
under the build that takes that option (``judge.follow``), so what the agent does after the
choice is judged too: before, every test stopped at the first departure, and a fault that shows
only after a kept prompt (``second-text-ignored`` of the faulty agents) passed the full plan.

One path, played live: a session under ``a``; resumed with ``b`` (the choice); a restart; a
load that re-sends nothing (T15: the stored prompt, or the default). The reference agent built
with ``on_differ = "keep"`` follows it and passes; the faulty SDK agent, which keeps ``a``
running but stores ``b``, fails T15 after the follow; the reference agent as shipped never
departs, so there is nothing to follow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from model.machines import System
from model.revisions import REVISIONS
from model.types import BASE, ClientKind, Request, initial_world
from simulations.engines.domain import text
from simulations.engines.trace import Trace
from simulations.live.conform.conform import _replay, _store_dir, replay_live
from simulations.live.conform.options import Options, RunState, _run_async
from simulations.live.conform.report import Report, write_counterexamples
from simulations.live.oracle.judge import Seen, choice_options, follow, tier
from simulations.live.oracle.results import FAIL, INFORMATIONAL, PASS, LiveTest
from simulations.live.oracle.results import TestRun as Run
from simulations.live.reference.agent import default_caps

ROOT = Path(__file__).resolve().parent.parent
SDK_AGENT = ROOT / "tests" / "fixtures" / "faulty_agents" / "sdk_agent.py"
CAPS = default_caps("envelope")


def _played(*reqs: Request) -> Trace:
    """``reqs`` on one connection, with a restart where ``"restart"`` stands: the client
    connects and initializes again after it."""
    connect = Request("connect", client=ClientKind.CONFORMING)
    out = [connect, Request("initialize")]
    for req in reqs:
        out += [req, connect, Request("initialize")] if req.method == "restart" else [req]
    return Trace(CAPS, tuple(out))


def _path() -> Trace:
    return _played(
        Request("session_new", system_prompt=text("a"), mode="append"),
        Request("session_prompt", sid="s1"),
        Request("session_resume", sid="s1", system_prompt=text("b"), mode="append"),
        Request("restart"),
        Request("session_load", sid="s1"),
    )


def _forks() -> Trace:
    """A session under ``a``; a restart; a fork of it before it is re-opened; a load; a fork
    again (``fork-drops-prompt-after-restart``: the first fork drops the prompt, the second,
    of a session opened since, inherits it)."""
    return _played(
        Request("session_new", system_prompt=text("a"), mode="append"),
        Request("restart"),
        Request("session_fork", sid="s1"),
        Request("session_load", sid="s1"),
        Request("session_fork", sid="s1"),
    )


def _live(argv: list[str], trace: Trace | None = None) -> Run:
    tables = REVISIONS["v1-stable"].tables
    test = LiveTest("follow", trace or _path(), ())
    with _store_dir() as scratch:
        state = RunState(Options("v1-stable", 10.0, 60.0, scratch=scratch))
        run = _run_async(_replay(argv, test, tables, CAPS, state))
    assert run is not None
    return run


def _reference(tmp_path: Path, **knobs: object) -> list[str]:
    argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    argv += ["--store", "{store}"]
    if knobs:
        profile = tmp_path / "agent.toml"
        lines = ['name = "keeps"', 'revision = "v1-stable"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in knobs.items()]  # TOML's literals too
        profile.write_text("\n".join(lines) + "\n")
        argv += ["--profile", str(profile)]
    return argv


def test_follow_finds_the_build_that_answers_as_the_agent_did() -> None:
    """In the model alone: at the resume, the slot ``a`` kept is the ``on_differ = "keep"``
    build's; the slot nobody gives has no build; from the kept build, the options are
    relative to it (setting ``on_differ`` back is the reference again)."""
    system, world = System(REVISIONS["v1-stable"].tables), initial_world(CAPS)
    steps = []
    for req in _path().requests[:5]:
        steps.append(system.step(world, req))
        world = steps[-1].after
    resume = steps[-1]
    found = follow("v1-stable", ["T16"], resume, Seen(None, (BASE, "a")))
    assert [o.knobs for o in found] == [(("on_differ", "keep"),)]
    assert follow("v1-stable", ["T16"], resume, Seen(None, ("z",))) == []
    rejects = follow("v1-stable", ["T16"], resume, Seen(-32602))
    assert [o.knobs for o in rejects] == [(("on_differ", "reject"),)]
    kept = choice_options("v1-stable", (("on_differ", "keep"),))["T16"]
    assert [o.knobs for o in kept][:2] == [(("on_differ", "keep"),), ()]


def test_an_agent_that_keeps_is_followed_past_the_choice_and_passes(tmp_path: Path) -> None:
    run = _live(_reference(tmp_path, on_differ="keep"))
    assert run.followed == [(5, 'on_differ = "keep"')], run.followed
    assert run.knobs == (("on_differ", "keep"),)
    # the one failure is P9, informational: the client re-sent another prompt, the agent kept
    # its own and said nothing (issue 55); no rule fails
    assert run.stopped_at is None, [f.message for f in run.failed]
    assert [(f.rid, f.step) for f in run.failed] == [("P9", 5)]
    chose = [f for f in run.findings if f.rid == "T16"]
    assert chose and all(f.status == PASS for f in chose)
    assert any(f.step == 9 and f.status == PASS for f in run.findings)  # judged past it


def test_the_reference_agent_has_nothing_to_follow(tmp_path: Path) -> None:
    run = _live(_reference(tmp_path))
    assert run.followed == [] and run.stopped_at is None and not run.failed


def test_a_fault_after_the_choice_fails_once_the_agent_is_followed() -> None:
    argv = ["env", "FAULTY_AGENT_FAULT=second-text-ignored", sys.executable, str(SDK_AGENT)]
    run = _live([*argv, "{store}"])
    assert run.followed == [(5, 'on_differ = "keep"')], run.followed
    assert run.stopped_at == 9, (run.stopped_at, [f.message for f in run.findings])
    assert "T15" in {f.rid for f in run.failed}, [f.message for f in run.failed]
    # before it only P9 (informational): the kept prompt was not the one re-sent (issue 55)
    assert all(f.status != FAIL or f.rid == "P9" for f in run.findings if f.step < 9)


def test_one_agent_is_one_build_a_choice_taken_one_way_then_the_other_fails() -> None:
    """The first fork shows the default (the ``fork_inherits = false`` build's answer, so
    the test follows it); the second, of the same session, inherits: the reference's
    answer, but not the answer of a build that gave the first fork the default. Neither
    build answers both: T15 fails at the second fork, the message saying why."""
    argv = ["env", "FAULTY_AGENT_FAULT=fork-drops-prompt-after-restart", sys.executable]
    run = _live([*argv, str(SDK_AGENT), "{store}"], _forks())
    assert run.followed == [(7, "fork_inherits = false")], run.followed
    assert run.stopped_at == 9, (run.stopped_at, [f.message for f in run.findings])
    t15 = [f for f in run.failed if f.rid == "T15"]
    assert t15 and "earlier steps" in t15[0].message, [f.message for f in run.failed]


def test_an_agent_that_never_inherits_is_followed_to_the_end(tmp_path: Path) -> None:
    """The build that never inherits: followed from the first fork on, every later answer
    its own. (P4, the end-to-end inheritance v1-stable does not promise, is recorded as
    INFORMATIONAL, as before.)"""
    run = _live(_reference(tmp_path, fork_inherits=False), _forks())
    assert run.followed == [(7, "fork_inherits = false")], run.followed
    counted = [f.message for f in run.failed if tier(f.rid) != INFORMATIONAL]
    assert run.stopped_at is None and not counted, counted
    assert {f.rid for f in run.failed} == {"P4"}


def test_a_failure_past_a_follow_is_written_under_the_build_and_replays(tmp_path: Path) -> None:
    """Its counterexample names the build it was judged by, with the profile that rebuilds it,
    and ``replay`` against the same agent reproduces it: the live replay follows again."""
    argv = ["env", "FAULTY_AGENT_FAULT=second-text-ignored", sys.executable, str(SDK_AGENT)]
    argv += ["{store}"]
    run = _live(argv)
    tables = REVISIONS["v1-stable"].tables
    report = Report(argv, "v1-stable", CAPS, None, 1, [run], tables, [run.test], "now")
    written = write_counterexamples(report, tmp_path / "out")
    d = written["T15"]
    review = (d / "review.md").read_text(encoding="utf-8")
    assert 'the build `on_differ = "keep"`' in review and "agent-profile.json" in review
    profile = json.loads((d / "agent-profile.json").read_text(encoding="utf-8"))
    assert profile == {"name": "followed", "revision": "v1-stable", "on_differ": "keep"}
    assert replay_live(d / "trace.itf.json", argv, timeout=10) == 1
    fixed = ["env", "-u", "FAULTY_AGENT_FAULT", sys.executable, str(SDK_AGENT), "{store}"]
    assert replay_live(d / "trace.itf.json", fixed, timeout=10) == 0
