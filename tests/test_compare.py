"""Two designs side by side (``check --compare A B``; issue 55, item 3), and a change of
share said in the same words by the verdict diffs of ``check --amend``."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from simulations.cli import main
from simulations.engines import cache, population, share
from simulations.outputs.compare import Share, change_words, share_change

TINY = ("--bound", "tiny", "--quiet")


@pytest.mark.parametrize(
    ("before", "after", "words"),
    [
        ((28, 144), (28, 72), "the share doubled"),
        ((28, 72), (28, 144), "the share halved"),
        ((10, 90), (10, 30), "the share tripled"),
        ((30, 90), (10, 90), "the share fell to a third"),
        ((1, 100), (5, 100), "the share grew 5-fold"),
        ((6, 100), (1, 100), "the share fell to 1/6"),
        ((76, 144), (4, 36), "the share fell from 53% to 11%"),
        ((1, 3), (2, 5), "the share rose from 33% to 40%"),
        ((16, 144), (4, 36), "the share is unchanged"),
        ((0, 144), (12, 36), "from none to some"),
        ((0, 144), (36, 36), "from none to all"),
        ((12, 36), (0, 12), "from some to none"),
        ((144, 144), (0, 12), "from all to none"),
        ((28, 144), (72, 72), "from some to all"),
        ((144, 144), (28, 72), "from all to some"),
        ((0, 144), (0, 12), "none before and after"),
        ((144, 144), (12, 12), "all before and after"),
    ],
)
def test_a_change_of_share_in_words(
    before: tuple[int, int], after: tuple[int, int], words: str
) -> None:
    assert change_words(Fraction(*before), Fraction(*after)) == words


def test_share_change_names_both_shares_then_the_words() -> None:
    assert share_change(Share(28, 144), Share(28, 72)) == "28 of 144 → 28 of 72: the share doubled"
    build = Share(1, 1, build=True)
    assert share_change(build, Share(28, 72)) == "violated → 28 of 72: from all to some"
    assert share_change(build, Share(0, 1, build=True)) == "violated → holds: from all to none"
    assert share_change(build, build) == "violated → violated: unchanged"


def _lines(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if re.match(r"P\d ", line)}


def test_compare_a_revision_with_an_amendment(capsys: pytest.CaptureFixture[str]) -> None:
    """v1-stable's 144 pairs against stable-prompt's 12 on tiny: P4 is lost by 56 pairs, then
    by none; its line gives both verdicts, both shortest lengths and the share in words."""
    code = main(["check", "--compare", "v1-stable", "stable-prompt", *TINY])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "A: v1-stable as a population (144 pairs)" in out
    assert "B: amendment stable-prompt of v1-stable as a population (12 pairs)" in out
    p4 = _lines(out)["P4"]
    assert p4.split()[1:7] == ["lost", "by", "some", "holds", "for", "every"]
    assert "5 steps | -" in p4 and p4.endswith("56 of 144 → 0 of 12: from some to none  ←")
    assert "0 of 144 → 0 of 12: none before and after" in _lines(out)["P6"]
    assert "← marks the 5 ids whose verdict differs: P4, P5, P7, P8, P9" in out


def test_compare_json_keeps_counts_lengths_and_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--compare", "v1-stable", "stable-prompt", *TINY, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    p4 = data["properties"]["P4"]
    assert p4["a"] == {"verdict": "lost by some", "lost_by": 56, "pairs": 144, "shortest": 5}
    assert p4["b"] == {
        "verdict": "holds for every pair",
        "lost_by": 0,
        "pairs": 12,
        "shortest": None,
    }
    assert p4["differs"] is True and p4["share_change"] == "56 of 144 → 0 of 12: from some to none"
    assert (data["a"]["kind"], data["b"]["kind"], data["bound"]) == (
        "population",
        "population",
        "tiny",
    )
    assert data["complete"] is True


def test_compare_one_build_with_a_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A revision without open choices and a profile's file are each one build: holds or
    violated, and the profile keeps its own restarts policy."""
    f = tmp_path / "p.toml"
    f.write_text(
        'name = "mine"\nrevision = "v1-stable"\non_load = "default"\nfork_inherits = false\n'
    )
    assert main(["check", "--compare", "rfd-final", str(f), *TINY]) == 0
    out = capsys.readouterr().out
    assert "A: rfd-final, one build  restarts=any" in out
    assert "B: profile mine (v1-stable), one build  restarts=same" in out
    assert _lines(out)["P4"].endswith("holds → violated: from none to all  ←")
    assert _lines(out)["P1"].endswith("holds → holds: unchanged")


def test_the_amend_diff_says_the_share_as_compare_does(capsys: pytest.CaptureFixture[str]) -> None:
    """One function words both: the verdict diff of check --amend (a population's, and one
    build's with --reference) and check --compare."""
    main(["check", "--compare", "v1-stable", "stable-prompt", *TINY])
    compared = _lines(capsys.readouterr().out)["P4"]
    said = compared.split("   ")[-1].removesuffix("  ←").strip()
    main(["check", "--amend", "stable-prompt", *TINY])
    out = capsys.readouterr().out
    assert f"P4   lost by some → holds for every pair ({said})  ←" in out
    main(["check", "--amend", "agent-keeps-stored-prompt", "--reference", *TINY])
    out = capsys.readouterr().out
    assert re.search(r"  P\d   violated → holds: from all to none  its \d+-step", out), out


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--compare", "v1-stable", "no-such-thing"], "argument --compare: 'no-such-thing'"),
        (["--compare", "v1-stable", "x.txt"], "argument --compare: 'x.txt'"),
        (["--compare", "v1-stable", "rfd-final", "--profile", "buzz-agent"], "drop --profile"),
        (["--compare", "v1-stable", "rfd-final", "--engine", "hypothesis"], "drop --engine"),
        (["--compare", "v1-stable"], "argument --compare: expected 2 arguments"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    argv: list[str], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", *argv, *TINY]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and names in err[0], err


def test_a_bad_file_names_its_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a.toml"
    f.write_text('name = "a"\nbase = "v1-stable"\n[must]\non_omit = "sometimes"\n')
    assert main(["check", "--compare", "v1-stable", str(f), *TINY]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("acp-sysprompt: error: argument --compare:") and "on_omit" in err
    assert "\n" not in err


def test_a_repeated_comparison_is_answered_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(share.SHARE, raising=False)
    monkeypatch.setattr(share, "SMALLEST", 0.0)  # every answer kept, however quick
    argv = ["check", "--compare", "v1-stable", "stable-prompt", *TINY, "--cache", str(tmp_path)]
    notes = []
    for _ in range(2):
        monkeypatch.setattr(population, "_SEARCHED", {})  # as a new process would
        assert main(argv) == 0
        head = capsys.readouterr().out.splitlines()[0]
        note = re.search(r"\((\d+) of (\d+) searches answered from the cache\)", head)
        assert note is not None, head
        notes.append((int(note[1]), int(note[2])))
    (cold, asked), (warm, again) = notes
    assert cold == 0 and asked > 0 and warm == again == asked
    assert cache.active() is None


def test_a_population_and_a_build_differ_only_where_their_shares_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A build's holds is a population's holds for every pair: v1-stable against rfd-final's
    reference build on tiny marks P4, P5, P7, P8 and P9 only (tiny has one connection: P9 is
    lost by the agents that keep a differing re-sent prompt silently)."""
    assert main(["check", "--compare", "v1-stable", "rfd-final", *TINY]) == 0
    out = capsys.readouterr().out
    assert "← marks the 5 ids whose verdict differs: P4, P5, P7, P8, P9" in out
    assert _lines(out)["P1"].endswith("0 of 144 → holds: none before and after")
