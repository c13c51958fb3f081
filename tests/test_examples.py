"""Issue 44: the example agent for agent authors (``examples/sdk_agent/``), judged as its README
says to judge it: ``acp-sysprompt conform --revision v1-stable -- python agent.py --store
{store}``, on the ``tiny`` bound here (two sessions, both modes, load, resume, fork, close and
list; no restart). It must stay CONFORMANT with every situation of the plan run, and a copy with
one line broken must not be: the check can tell the example from a regression of it. Both
runs are ``make exhaustive`` (an SDK agent's full plan: ``tests/suite_split.py``); ``make test``
keeps a short run (what the example advertises, T15's tests) and what it imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "sdk_agent" / "agent.py"

# the one line that replays a session's history before session/load answers, and the same line
# replaying nothing: the load then answers with no history before it (S8, MANDATORY)
REPLAY = 'for role, text in record["history"]:'
NO_REPLAY = "for role, text in []:"
ADVERTISED = "{systemPrompt=override load_session resume fork close list}"  # no delete


def _conform(agent: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """``conform`` from the command line, as an author runs it; its exit code and JSON report."""
    report = tmp_path / "report.json"
    argv = [
        sys.executable,
        "-m",
        "simulations",
        "conform",
        "--revision",
        "v1-stable",
        "--bound",
        "tiny",
        "--jobs",
        "2",
        *extra,
        "--report-json",
        str(report),
        "--",
        sys.executable,
        str(agent),
        "--store",
        "{store}",
    ]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    assert report.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return done.returncode, data


def test_the_example_agent_conforms_with_every_situation_of_the_plan_run(tmp_path: Path) -> None:
    code, data = _conform(EXAMPLE, tmp_path)
    failing = {
        rid: r["outcomes"][:1] for rid, r in data["requirements"].items() if r["status"] == "FAIL"
    }
    assert code == 0 and data["verdict"]["conformant"], failing
    coverage = data["coverage"]
    assert coverage["total"] > 0 and coverage["run"] == coverage["total"], coverage
    assert data["introspection"] is True  # every slot seen, not only the answers
    assert data["agent_capabilities"] == ADVERTISED


@pytest.mark.exhaustive  # a second tiny run (~3 min on a loaded machine): make exhaustive
def test_the_example_with_its_replay_line_broken_is_not_conformant(tmp_path: Path) -> None:
    source = EXAMPLE.read_text(encoding="utf-8")
    assert source.count(REPLAY) == 1  # the line this test breaks is still the example's
    broken = tmp_path / "agent.py"
    broken.write_text(source.replace(REPLAY, NO_REPLAY), encoding="utf-8")
    code, data = _conform(broken, tmp_path)
    assert code == 1 and not data["verdict"]["conformant"]
    s8 = data["requirements"]["S8"]
    assert s8["status"] == "FAIL" and "S8" in data["verdict"]["failing"]
    evidence = next(o["message"] for o in s8["outcomes"] if o["status"] == "FAIL")
    assert "no session/update before the session/load answer" in evidence, evidence


def test_the_example_starts_advertises_what_it_serves_and_passes_t15s_tests(
    tmp_path: Path,
) -> None:
    """``make test``'s short run of the example (``--only T15``: the tests of T15's rows)."""
    code, data = _conform(EXAMPLE, tmp_path, "--only", "T15")
    assert code == 0 and data["verdict"]["conformant"], data["verdict"]
    assert data["requirements"]["T15"]["status"] == "PASS"
    assert data["agent_capabilities"] == ADVERTISED


def test_the_example_imports_only_the_sdk_and_the_standard_library() -> None:
    """An author copies it out of this checkout: nothing of the model may come with it."""
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
    }
    assert imported - sys.stdlib_module_names == {"acp"}, imported
