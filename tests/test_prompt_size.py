"""The prompt-size tests (issue 58, item 7a): a client prompt of 16 KiB, which an agent should
take, and one of 200 KiB, over Linux's 128 KiB limit on one command-line argument (the Claude
Agent SDK passes the system prompt to its CLI as one). What the spec wants of either: the
prompt applied (found in the slot), or an error and no session (T9 on ACP v1 as stabilised).

Each is judged on reference-agent builds that take the oversize prompt as a real agent may
(``--oversize-fault``): one that exits (a crash), one that errs with nothing created (what
the spec asks), one that opens the session without the prompt (a silent drop), one that errs
but opens the session all the same. On main there is no such test (nor module): a run of the
default plan sent no prompt over a few bytes."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from model.types import Caps, PromptCap
from simulations.live.conform.options import Options, RunState
from simulations.live.conform.prompt_size import (
    SIZE_TEST,
    SIZES,
    size_rid,
    size_tests,
    sized_text,
    wanted,
)
from simulations.live.oracle.results import FAIL, PASS
from simulations.live.reference.agent import OVERSIZE, build_for

ROOT = Path(__file__).resolve().parent.parent


def test_the_texts_are_of_their_size_and_the_big_one_over_the_argument_limit() -> None:
    for size in SIZES:
        text = sized_text(size)
        assert len(text.encode("utf-8")) == size
        lines = text.splitlines()
        assert len(set(lines[:-1])) == len(lines) - 1  # no line of it stands for another
        assert str(size) in lines[0]
    assert SIZES[0] < OVERSIZE < SIZES[1] and OVERSIZE == 128 * 1024


def test_which_runs_send_them() -> None:
    full = build_for("v1-stable").caps
    assert size_rid("v1-stable") == "T9" and size_rid("rfd-final") == "R11"
    assert size_rid("alt-instructions") is None
    assert wanted("v1-stable", full, None) == list(SIZES)
    assert wanted("v1-stable", Caps(system_prompt=PromptCap.NONE), None) == []
    assert wanted("v1-stable", full, ["T13"]) == []
    assert wanted("v1-stable", full, ["T9"]) == list(SIZES)
    assert wanted("v1-stable", full, [f"{SIZE_TEST}-200KiB"]) == [SIZES[1]]


def _sized(*extra: str) -> list[Any]:
    """The two tests against the reference agent (with ``extra`` options), as a run makes
    them after its plan."""
    argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    argv += ["--store", "{store}", *extra]
    with tempfile.TemporaryDirectory(prefix="sizes-") as scratch:
        opts = Options("v1-stable", timeout=10.0, cwd=str(ROOT), scratch=scratch)
        return asyncio.run(size_tests(argv, RunState(opts), build_for("v1-stable").caps, None))


# the build → the 200 KiB test's status and what its finding says (the 16 KiB one passes)
BUILDS = {
    None: (PASS, "applied: the whole text is in the introspection extension's slot"),
    "error": (PASS, "refused it with error -32602; session/list shows no session"),
    "crash": (FAIL, "the agent failed (the agent exited with code 1 (crash)); the spec wants"),
    "drop": (FAIL, "opened the session without it: the text is not in the introspection"),
    "leak": (FAIL, "refused it with error -32602, yet session/list shows ['s1']"),
}


@pytest.mark.parametrize("fault", list(BUILDS), ids=[str(b) for b in BUILDS])
def test_each_build_is_judged_right(fault: str | None) -> None:
    small, big = _sized(*(["--oversize-fault", fault] if fault else []))
    assert [r.name for r in (small, big)] == [f"{SIZE_TEST}-16KiB", f"{SIZE_TEST}-200KiB"]
    ((rid, status, message),) = [(f.rid, f.status, f.message) for f in small.findings]
    assert (rid, status) == ("T9", PASS), message
    assert "16 KiB prompt (16384 bytes, append): applied" in message
    ((rid, status, message),) = [(f.rid, f.status, f.message) for f in big.findings]
    want, said = BUILDS[fault]
    assert (rid, status) == ("T9", want) and said in message, message
    assert message.startswith("session/new with a 200 KiB prompt (204800 bytes, append): ")
    assert bool(big.transcript) == (want == FAIL)  # a failing test's wire is kept


def test_a_default_run_sends_them_and_reads_the_slot_through_the_endpoint() -> None:
    """In a run (here an ``--only`` run naming them), through the model endpoint: the build
    that drops the oversize prompt fails T9, and the report's verdict says so."""
    from simulations.live.conform.conform import conform

    argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    argv += ["--store", "{store}", "--model-endpoint", "{endpoint}", "--oversize-fault", "drop"]
    report = conform(
        argv,
        revision="v1-stable",
        cwd=str(ROOT),
        timeout=10,
        only=[SIZE_TEST],
        model_endpoint=True,
    )
    assert [r.name for r in report.runs] == [f"{SIZE_TEST}-16KiB", f"{SIZE_TEST}-200KiB"]
    t9 = report.requirements()["T9"]
    assert t9["status"] == FAIL and "T9" in report.verdict()["failing"]
    messages = [o["message"] for o in t9["outcomes"]]
    assert "applied: the whole text is in the model call's system slot" in messages[0]
    assert "the text is not in the model call's system slot (dropped)" in messages[1]
