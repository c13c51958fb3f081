"""The opening of ``docs/real-agents.md`` (``simulations.live.conform.agents_page``): each agent's
summary from its JSON report, the findings an upstream issue can take, and the picture of agents ×
ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulations.live.conform import agents_page
from simulations.live.oracle.results import FAIL, PASS, SKIPPED


def _report(statuses: dict[str, str], unstable: dict[str, tuple[int, int]] | None = None) -> Any:
    """A JSON report (``report.to_json``'s shape, the fields the summary reads)."""
    tiers = {"S8": "MANDATORY", "T13": "CAPABILITY", "T7": "ADVISORY", "ROW-session.9": "X"}
    reqs = {
        rid: {
            "tier": tiers[rid],
            "status": status,
            "outcomes": [{"status": status, "message": f"evidence of {rid}"}],
        }
        for rid, status in statuses.items()
    }
    failing = [r for r, s in statuses.items() if s == FAIL and not r.startswith(("ROW", "T7"))]
    return {
        "requirements": reqs,
        "verdict": {"conformant": not failing, "failing": failing},
        "repeat": 3 if unstable else 1,
        "unstable": {k: {"failed": a, "runs": b} for k, (a, b) in (unstable or {}).items()},
    }


def test_a_summary_keeps_each_id_and_the_evidence_of_each_fail() -> None:
    s = agents_page.summary(
        _report({"S8": PASS, "T13": FAIL, "T7": SKIPPED, "ROW-session.9": FAIL}),
        "@x/agent",
        "1.2.3",
        61.4,
        12,
    )
    assert s["statuses"] == {"S8": PASS, "T13": FAIL, "T7": SKIPPED}  # rows no MUST decides: out
    assert s["evidence"] == {"T13": "1 of the 1 tests that judged it failed it: evidence of T13"}
    assert (s["conformant"], s["failing"], s["seconds"], s["tests"]) == (False, ["T13"], 61, 12)


def test_an_id_that_failed_in_some_runs_only_is_unstable_and_says_how_often() -> None:
    s = agents_page.summary(_report({"S8": FAIL, "T13": PASS}, {"S8": (2, 3)}), "a", "1", 1, 1)
    assert s["statuses"]["S8"] == agents_page.UNSTABLE
    assert s["evidence"]["S8"].startswith("FAIL in 2 of 3 runs; 1 of the 1 tests that judged")


def _two() -> dict[str, dict[str, Any]]:
    return {
        "good": agents_page.summary(_report({"S8": PASS, "T13": PASS}), "@x/good", "2.0", 5, 3),
        "bad": agents_page.summary(_report({"S8": PASS, "T13": FAIL}), "@x/bad", "0.9", 5, 3),
    }


def test_a_finding_names_the_package_version_id_evidence_and_the_command() -> None:
    found = agents_page.findings(_two(), "v1-stable")
    assert len(found) == 1
    (line,) = found
    for part in (
        "@x/bad 0.9 fails T13",
        "CAPABILITY",
        "evidence of T13",
        "make real-agents AGENTS=bad",
        "conform --recipe bad --prefix real-agents --only T13",
    ):
        assert part in line, (part, line)
    clean = {k: v for k, v in _two().items() if k == "good"}
    assert agents_page.findings(clean, "v1-stable")[0].startswith("- none")


def test_the_columns_are_the_ids_some_agent_was_judged_on_by_tier() -> None:
    two = _two()
    two["good"]["statuses"]["T7"] = SKIPPED
    two["good"]["tiers"]["T7"] = "ADVISORY"
    assert agents_page.columns(two) == ["S8", "T13"]  # T7 SKIPPED everywhere: no column
    two["bad"]["statuses"]["T7"] = PASS
    two["bad"]["tiers"]["T7"] = "ADVISORY"
    assert agents_page.columns(two) == ["S8", "T13", "T7"]


def test_the_picture_is_a_png_that_changes_with_a_verdict(tmp_path: Path) -> None:
    two = _two()
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    agents_page.draw(two, first)
    two["bad"]["statuses"]["T13"] = PASS
    agents_page.draw(two, second)
    for p in (first, second):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first.read_bytes() != second.read_bytes()


def test_summaries_round_trip_and_a_missing_or_broken_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    assert agents_page.load(path) == {}
    agents_page.save(path, _two())
    assert agents_page.load(path) == _two()
    path.write_bytes(b"\xff not json")
    assert agents_page.load(path) == {}
