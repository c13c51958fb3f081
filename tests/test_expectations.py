"""Pinned expectations of real agents (issue 43, item 3): ``real-agents/expectations.toml``,
``conform --recipe NAME --expect FILE`` and ``tools/real_agents.py --expect FILE``.

What was seen is compared with the pins of the recipe and version: each kind of difference is
named (a new failure, a pinned failure that passed, an id newly unstable, an agent or a
version not pinned), exit 1; nothing differs, exit 0 (a pinned-unstable id that failed in no
run is a note, no difference); a
pins file with a bad field is one line naming it, exit 2, before any agent runs. The live
cases run the reference agent through a recipe, as a real agent is run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simulations.live.conform.expectations import (
    Expectations,
    ExpectationsError,
    Pins,
    Seen,
    differences,
    load_expectations,
    unseen,
)
from simulations.live.oracle.results import FAIL, PASS
from simulations.live.recipes.recipes import load_recipe, shipped

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "real-agents" / "expectations.toml"


def _pinned(pins: Pins) -> Expectations:
    return Expectations("pins.toml", {"agent": {"1.0": pins}})


def _seen(runs: int = 3, **failed: tuple[int, int]) -> Seen:
    statuses = {"T13": PASS, "S8": PASS, "T15": PASS, **{rid: FAIL for rid in failed}}
    return Seen(statuses, failed, runs)


def test_what_matches_its_pins_differs_in_nothing() -> None:
    pins = _pinned(Pins(fail=frozenset({"T13"}), unstable=frozenset({"S8"})))
    assert differences(pins, "agent", "1.0", _seen(T13=(3, 3), S8=(2, 3))) == []
    # an intermittent id may fail in every one of a few runs: still as pinned
    assert differences(pins, "agent", "1.0", _seen(T13=(3, 3), S8=(3, 3))) == []


@pytest.mark.parametrize(
    ("pins", "seen", "said"),
    [
        (Pins(), _seen(T13=(3, 3)), "agent 1.0: T13: new failure (FAIL in 3 of 3 runs)"),
        (
            Pins(),
            _seen(S8=(1, 3)),
            "agent 1.0: S8: new failure, unstable (FAIL in 1 of 3 runs)",
        ),
        (
            Pins(fail=frozenset({"S8"})),
            _seen(S8=(2, 3)),
            "agent 1.0: S8: newly unstable: pinned to fail in every run, FAIL in 2 of 3 runs",
        ),
        (
            Pins(fail=frozenset({"T13"})),
            _seen(),
            "agent 1.0: T13: pinned to fail, now PASS (in 3 run(s))",
        ),
        (
            Pins(fail=frozenset({"T9"})),
            _seen(),
            "agent 1.0: T9: pinned to fail, now not judged (in 3 run(s))",
        ),
    ],
)
def test_each_kind_of_difference_is_named(pins: Pins, seen: Seen, said: str) -> None:
    assert differences(_pinned(pins), "agent", "1.0", seen) == [said]


def test_a_run_that_did_not_see_the_agent_differs_from_every_pin() -> None:
    """A failed start-up, or a cut that left MANDATORY ids untested, differs from any pin:
    ``fail = []``, a pinned failure, an agent the file does not pin."""
    gap = "the agent failed at start-up: exited with code 1"
    seen = Seen({}, {}, 1, (gap,))
    for pins in (Pins(), Pins(fail=frozenset({"T13"}))):
        said = differences(_pinned(pins), "agent", "1.0", seen)
        assert said[0] == f"agent 1.0: {gap}", said
    assert differences(_pinned(Pins()), "other", "2.0", seen)[0] == f"other 2.0: {gap}"


def test_a_pinned_unstable_id_that_did_not_show_is_a_note_not_a_difference() -> None:
    """A race seen in one test of a hundred does not show in every three runs: no
    difference (exit 0), but said, so a fix is seen; an id pinned to fail that passes still
    differs."""
    pins = _pinned(Pins(fail=frozenset({"T13"}), unstable=frozenset({"S8"})))
    assert differences(pins, "agent", "1.0", _seen(T13=(3, 3))) == []
    assert unseen(pins, "agent", "1.0", _seen(T13=(3, 3))) == [
        "agent 1.0: S8: pinned unstable, failed in none of 3 run(s) (now PASS): fixed, or it "
        "did not show this time; unpin it once it stays away"
    ]
    assert unseen(pins, "agent", "1.0", _seen(T13=(3, 3), S8=(1, 3))) == []
    assert unseen(pins, "agent", "2.0", _seen()) == []  # not pinned: differences says so
    assert differences(pins, "agent", "1.0", _seen(S8=(1, 3))) == [
        "agent 1.0: T13: pinned to fail, now PASS (in 3 run(s))"
    ]


def test_an_agent_or_version_not_pinned_is_named_with_what_was_seen() -> None:
    pins = _pinned(Pins())
    seen = _seen(T13=(3, 3), S8=(1, 3))
    assert differences(pins, "agent", "2.0", seen) == [
        "agent 2.0: no pins for this version in pins.toml (pinned versions: 1.0; seen: fail = "
        '["T13"], unstable = ["S8"])'
    ]
    assert differences(pins, "other", "1.0", seen) == [
        'other 1.0: not pinned in pins.toml (seen: fail = ["T13"], unstable = ["S8"])'
    ]


# shipped recipes with no pins yet (none now: the seven of issue 43 are pinned from their runs
# on the tiny bound, docs/recipes.md); `make real-agents` names each such as not pinned
UNPINNED: set[str] = set()


def test_the_shipped_pins_name_each_shipped_recipe_at_its_version() -> None:
    """The pins of docs/real-agents.md: claude-agent-acp fails T13 (and P1), the zed claude
    adapter's S8 is unstable; a recipe moved to another version without its pins
    fails here, before `make real-agents` would say so after an hour. Every shipped recipe is
    pinned at its version but those of ``UNPINNED``, and nothing else is pinned."""
    pins = load_expectations(PINS)
    assert set(shipped()) >= UNPINNED
    for name in set(shipped()) - UNPINNED:
        recipe = load_recipe(name)
        assert list(pins.agents.get(name, {})) == [recipe.version], name
    assert pins.agents["claude-agent-acp"]["0.101.0"].fail == {"P1", "T13"}
    assert pins.agents["zed-claude-agent-acp"]["0.23.1"].unstable == {"S8"}
    assert pins.agents["fast-agent"]["0.10.48"].fail == {"S8", "VERSION"}
    assert set(pins.agents) == set(shipped()) - UNPINNED


def test_the_pins_say_what_the_committed_page_shows() -> None:
    """docs/real-agents.md (its summaries, docs/real-agents.json) and the pins agree: every id an
    agent failed on the page is pinned (to fail, or unstable), and every id pinned to fail in
    every run failed there. A page and pins that part would make `make real-agents` report a
    difference nobody wrote down."""
    from simulations.live.conform import agents_page

    pins = load_expectations(PINS)
    summaries = agents_page.load(ROOT / "docs" / "real-agents.json")
    assert set(summaries) == set(shipped()) - UNPINNED
    for name, s in summaries.items():
        pin = pins.agents[name][s["version"]]
        failed = {r for r, st in s["statuses"].items() if st in (FAIL, agents_page.UNSTABLE)}
        assert failed <= pin.fail | pin.unstable, (name, failed - pin.fail - pin.unstable)
        assert pin.fail <= failed, (name, pin.fail - failed)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[agent\n", "pins.toml: not valid TOML"),
        ('agent = "1.0"\n', "pins.toml: agent: a table of versions is needed"),
        ('[agent]\n"1.0" = 3\n', 'pins.toml: agent."1.0": a table with fail, unstable'),
        ('[agent."1.0"]\nfails = []\n', 'pins.toml: agent."1.0".fails: unknown key'),
        ('[agent."1.0"]\nfail = "T13"\n', 'pins.toml: agent."1.0".fail: a list of ids is needed'),
        ('[agent."1.0"]\nfail = [13]\n', 'agent."1.0".fail[0]: an id (a string) is needed'),
        (
            '[agent."1.0"]\nfail = ["T13", "T99"]\n',
            "agent.\"1.0\".fail[1]: 'T99' is no id conform reports",
        ),
        ('[agent."1.0"]\nfail = ["S8", "S8"]\n', 'agent."1.0".fail[1]: S8 is named twice'),
        (
            '[agent."1.0"]\nfail = ["S8"]\nunstable = ["S8"]\n',
            'agent."1.0".unstable: S8 is pinned to fail too',
        ),
        ('[agent."1.0"]\nwhy = 1\n', 'agent."1.0".why: a string is needed'),
    ],
)
def test_a_bad_pins_file_is_one_line_naming_the_field(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "pins.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ExpectationsError) as e:
        load_expectations(path)
    message = str(e.value)
    assert message.startswith("argument --expect: ") and said in message, message
    assert "\n" not in message


def test_a_pins_file_that_is_no_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExpectationsError, match="not a regular file"):
        load_expectations(tmp_path)
    with pytest.raises(ExpectationsError, match="No such file"):
        load_expectations(tmp_path / "none.toml")


# ---- the command line ---------------------------------------------------------------------


def _recipe(tmp_path: Path) -> Path:
    """The reference agent as a recipe (version 1.0), run through the model endpoint."""
    script = (
        f"exec {sys.executable} -m simulations.agent --revision v1-stable --model-api chat "
        "--store {home}/store --model-endpoint $(cat {home}/conf/url)"
    )
    return _named_recipe(tmp_path, "reference", script)


def _named_recipe(tmp_path: Path, name: str, script: str) -> Path:
    """A recipe ``name`` 1.0 whose agent is ``sh -c script``, its endpoint URL in a file."""
    recipe = tmp_path / f"{name}.toml"
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name = "{name}"
            version = "1.0"
            api = "chat"
            command = ["sh", "-c", "{script}"]
            [files]
            "conf/url" = "{{endpoint}}"
            """
        )
    )
    return recipe


def _conform(tmp_path: Path, pins: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "pins.toml"
    path.write_text(pins, encoding="utf-8")
    argv = [sys.executable, "-m", "simulations", "conform", "--recipe", str(_recipe(tmp_path))]
    argv += ["--timeout", "5", "--bound", "tiny", "--only", "ROW-new_session.9"]
    argv += ["--expect", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=180)


@pytest.mark.parametrize(
    ("pins", "code", "said"),
    [
        (
            '["reference"."1.0"]\nfail = []\n',
            0,
            ["expectations: reference 1.0 as pinned in "],
        ),
        (
            '["reference"."1.0"]\nfail = ["T13"]\n',
            1,
            [
                "expectations: 1 difference(s) from ",
                "  reference 1.0: T13: pinned to fail, now PASS (in 1 run(s))",
            ],
        ),
        (
            '["reference"."1.0"]\nfail = []\nunstable = ["T13"]\n',
            0,
            [
                "expectations: note: reference 1.0: T13: pinned unstable, failed in none of 1 "
                "run(s) (now PASS): fixed, or it did not show this time",
                "expectations: reference 1.0 as pinned in ",
            ],
        ),
    ],
    ids=["matches", "differs", "unstable-unseen"],
)
def test_conform_expect_exits_by_the_pins_not_the_verdict(
    tmp_path: Path, pins: str, code: int, said: list[str]
) -> None:
    """The reference agent conforms (exit 0 by its verdict): pinned to conform it exits 0;
    pinned to fail T13 it exits 1 and names the pin it no longer keeps; pinned unstable on T13
    it exits 0 and notes that T13 did not fail."""
    done = _conform(tmp_path, pins)
    assert done.returncode == code, done.stdout[-2000:] + done.stderr[-2000:]
    assert "VERDICT: CONFORMANT" in done.stdout
    lines = done.stdout.splitlines()
    for line in said:
        assert any(x.startswith(line) for x in lines), (line, done.stdout[-1000:])


@pytest.mark.parametrize(
    ("pins", "said"),
    [
        ('["reference"."1.0"]\nfail = ["T99"]\n', "fail[0]: 'T99' is no id conform reports"),
        ("[reference\n", "not valid TOML"),
        # a ROW- id of no table, or past a real table's rows: it would pin nothing
        (
            '["reference"."1.0"]\nfail = ["ROW-nosuch.3"]\n',
            "fail[0]: 'ROW-nosuch.3' is no id conform reports",
        ),
        (
            '["reference"."1.0"]\nunstable = ["ROW-session.999"]\n',
            "unstable[0]: 'ROW-session.999' is no id conform reports",
        ),
    ],
    ids=["T99", "toml", "row-no-table", "row-past-the-table"],
)
def test_a_bad_pins_file_ends_conform_before_any_agent_runs(
    tmp_path: Path, pins: str, said: str
) -> None:
    done = _conform(tmp_path, pins)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    err = done.stderr.strip()
    assert err.startswith("acp-sysprompt: error: argument --expect: ") and said in err, err
    assert "\n" not in err


@pytest.mark.parametrize(
    ("rid", "meant"),
    [
        ("ROW-nosuch.3", "ROW-session.3"),
        ("ROW-session.999", "ROW-session.9"),
        ("S88", "S8"),
        ("UPDATE_ID", "UPDATE-ID"),
    ],
)
def test_an_unknown_id_is_named_with_the_ids_it_might_mean(
    tmp_path: Path, rid: str, meant: str
) -> None:
    path = tmp_path / "pins.toml"
    path.write_text(f'[agent."1.0"]\nfail = ["{rid}"]\n', encoding="utf-8")
    with pytest.raises(ExpectationsError) as e:
        load_expectations(path)
    message = str(e.value)
    assert f"'{rid}' is no id conform reports" in message and "\n" not in message, message
    assert "did you mean " in message and meant in message.split("did you mean ")[1], message


def _dead_recipe(tmp_path: Path, script: str) -> Path:
    """A recipe (``dead`` 1.0) whose agent runs ``script`` instead of answering."""
    return _named_recipe(tmp_path, "dead", script)


@pytest.mark.parametrize(
    ("script", "why"),
    [("echo gone >&2; exit 3", "exited"), ("exec cat >/dev/null", "")],
    ids=["exits-at-once", "never-answers-initialize"],
)
def test_an_agent_that_does_not_start_differs_from_its_pins(
    tmp_path: Path, script: str, why: str
) -> None:
    """The gate cannot pass what it did not see: an agent pinned to conform (``fail = []``)
    that exits at start-up, or never answers initialize, is a difference (exit 1), named."""
    path = tmp_path / "pins.toml"
    path.write_text('["dead"."1.0"]\nfail = []\n', encoding="utf-8")
    argv = [sys.executable, "-m", "simulations", "conform"]
    argv += ["--recipe", str(_dead_recipe(tmp_path, script)), "--timeout", "2"]
    argv += ["--expect", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "VERDICT: NOT CONFORMANT (the agent did not initialize)" in done.stdout
    assert "as pinned" not in done.stdout
    lines = done.stdout.splitlines()
    diff = lines.index(next(x for x in lines if x.startswith("expectations: ")))
    assert lines[diff].startswith("expectations: 1 difference(s) from "), lines[diff:]
    assert lines[diff + 1].startswith("  dead 1.0: the agent failed at start-up: "), lines[diff:]
    assert why in lines[diff + 1]


def test_expect_needs_a_recipe(tmp_path: Path) -> None:
    from simulations.cli import main

    path = tmp_path / "pins.toml"
    path.write_text("", encoding="utf-8")
    assert main(["conform", "--expect", str(path), "--", "true"]) == 2


def test_real_agents_refuses_a_bad_pins_file_or_name_in_one_line(tmp_path: Path) -> None:
    """``make real-agents``' script checks its pins and names before the hour it takes."""
    path = tmp_path / "pins.toml"
    path.write_text('["codex-acp"."2.6.0"]\nunstable = "S8"\n', encoding="utf-8")
    tool = [sys.executable, str(ROOT / "tools" / "real_agents.py")]
    for args, said in (
        (["--expect", str(path)], 'codex-acp."2.6.0".unstable: a list of ids is needed'),
        (["no-such-agent"], "argument NAME: 'no-such-agent' is neither a shipped recipe"),
        (["--repeat", "0"], "argument --repeat: expected a number >= 1, got 0"),
    ):
        done = subprocess.run([*tool, *args], capture_output=True, text=True, timeout=120)
        err = done.stderr.strip()
        assert done.returncode == 2 and done.stdout == "", done.stdout + err
        assert err.startswith("real_agents: error: ") and said in err and "\n" not in err, err


def test_real_agents_keeps_the_sections_it_does_not_rerun() -> None:
    """``make real-agents AGENTS=…`` rewrites the sections of the agents it runs and keeps the
    others (measured results are not lost): the committed page is exactly the script's header
    around the sections it keeps, so a run of no agent would write it unchanged."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import real_agents
    finally:
        sys.path.remove(str(ROOT / "tools"))
    from simulations.live.conform import agents_page

    page = ROOT / "docs" / "real-agents.md"
    kept = real_agents.kept_sections(page)
    order = [name for name in sorted(shipped()) if name in kept]  # the agents run in full
    assert list(kept) == order and len(order) >= 4
    summaries = agents_page.load(page.with_suffix(".json"))
    written = real_agents.page(kept, [], summaries, "real-agents.png")
    assert written == page.read_text(encoding="utf-8")
    assert (ROOT / "docs" / "real-agents.png").is_file()
    # the picture and the findings are of the agents the page has a section for
    assert set(summaries) == set(order)
    assert kept["zed-claude-agent-acp"][0].startswith("## zed-claude-agent-acp — ")
