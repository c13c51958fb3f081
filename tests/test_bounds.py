"""Bounds as data: every named bound round-trips through its TOML file to the same exploration,
and a bad bound file gets one line naming the field, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulations.cli import main
from simulations.engines.bounds import BOUNDS, BoundError, bound_toml, load_bound

# the default bound's (states, edges, depth) on rfd-final, as tests/test_explore.py pins it
DEFAULT = (6618, 15333, 14)


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_every_named_bound_round_trips_through_toml(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.toml"
    path.write_text(bound_toml(BOUNDS[name]), encoding="utf-8")
    assert load_bound(str(path)) == BOUNDS[name]


def test_bound_show_default_checks_to_the_same_pinned_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What ``bound show default`` prints, passed back as ``--bound FILE``, is the default bound:
    the same states, edges and depth as test_explore pins for it."""
    assert main(["bound", "show", "default"]) == 0
    path = tmp_path / "mine.toml"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    code = main(["check", "--revision", "rfd-final", "--bound", str(path), "--json"])
    out, err = capsys.readouterr()
    budget = json.loads(out)["budget"]
    assert code == 0 and budget["complete"]
    assert (budget["states"], budget["edges"], budget["depth"]) == DEFAULT
    assert err.startswith("acp-sysprompt: bound default: wire (1 conn × 1 sessions")


def _texts(scope: dict[str, object], key: str) -> set[str]:
    values = scope.get(key) or []
    assert isinstance(values, list)
    return {b for p in values if isinstance(p, list) for b in p if b not in ("", "big", "<image>")}


@pytest.mark.parametrize("name", ["small", "default"])
def test_every_scope_that_sends_a_prompt_has_two_texts_and_a_restart_sees_both_modes(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 26, item 3 (the small-scope rule): in ``bound show`` of v1-stable's bounds every scope
    that sends a prompt on session/new or re-sends one on load, resume or fork has two distinct
    text symbols there, and some scope with a restart sends append and override."""
    import tomllib

    assert main(["bound", "show", name]) == 0
    bound = tomllib.loads(capsys.readouterr().out)
    scopes = [*bound["scopes"], *bound.get("envelope", [])]
    for scope in scopes:
        assert len(_texts(scope, "prompts")) >= 2, scope["name"]
        if "reopen_prompts" in scope:
            assert len(_texts(scope, "reopen_prompts")) >= 2, scope["name"]
    assert any(
        scope["restarts"] >= 1 and {"append", "override"} <= set(scope["modes"]) for scope in scopes
    )


def test_the_default_bound_shows_a_prompt_replaced_on_reopen_and_a_mode_lost_on_restart() -> None:
    """What the second text and the restart with both modes find on the default bound: the
    reference build of v1-stable loses P1 in 5 steps (new with a, load of the live session
    re-sending b, the turn runs [BASE, b]), and a store that forgets the mode across a restart
    breaks R18, which the default bound without its ``modes`` scope does not see."""
    from dataclasses import replace

    from model.invariants import CHECKS
    from simulations.api import check

    ref = check("v1-stable", bound="default")
    trace = ref.counterexamples["P1"]
    assert [r.method for r in trace.requests] == [
        "connect",
        "initialize",
        "session_new",
        "session_load",
        "session_prompt",
    ]
    sent = [trace.requests[i].system_prompt for i in (2, 3)]
    assert [[b.text for b in p or ()] for p in sent] == [["a"], ["b"]]
    from model.mutants import swap_effect
    from model.tables import REFERENCE
    from simulations.engines.explore import explore

    forgets = swap_effect(REFERENCE, "agent", "restart_keeping_store", "restart_forgetting_modes")
    caught = explore(forgets, "default", checks=[CHECKS["R18"]])
    assert caught.length("R18") == 4  # connect, initialize, new in override mode, restart
    b = BOUNDS["default"]
    without = replace(b, scopes=tuple(s for s in b.scopes if s.name != "modes"))
    assert "R18" not in explore(forgets, without, checks=[CHECKS["R18"]]).first


def _bad(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD_SCOPE = """
[[scopes]]
name = "one"
connections = 1
sessions = 1
restarts = 0
profiles = ["override: load_session fork"]
prompts = ["omitted", ["a"]]
modes = ["omitted"]
clients = ["conforming"]
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'name = "x"\n' + GOOD_SCOPE.replace("sessions = 1", "sesions = 1"),
            "scopes[0]: unknown field 'sesions' (did you mean 'sessions'?)",
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace("sessions = 1", 'sessions = "two"'),
            "scopes[0].sessions: expected a whole number >= 1, got 'two'",
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace("sessions = 1\n", ""),
            "scopes[0]: missing field 'sessions'",
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace('"override:', '"overide:'),
            "scopes[0].profiles[0]: unknown systemPrompt capability 'overide' "
            "(did you mean 'override'?)",
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace("load_session fork", "load fork"),
            "scopes[0].profiles[0]: unknown method 'load'",
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace('["omitted", ["a"]]', '["omitted", "a"]'),
            'scopes[0].prompts[1]: expected "omitted" or a list of blocks',
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace('["conforming"]', '["conformin"]'),
            "scopes[0].clients[0]: unknown client kind 'conformin' (did you mean 'conforming'?)",
        ),
        (
            'name = "x"\n' + GOOD_SCOPE.replace("restarts = 0", "restarts = -1"),
            "scopes[0].restarts: expected a whole number >= 0, got -1",
        ),
        (
            'name = "x"\nsumary = "y"\n' + GOOD_SCOPE,
            "unknown field 'sumary' (did you mean 'summary'?)",
        ),
        ('name = "x"\n', "missing [[scopes]]"),
        ("", "empty file (start from 'acp-sysprompt bound show default')"),
        ("name = [", "not valid TOML"),
        ('name = "x"\n' + GOOD_SCOPE + GOOD_SCOPE, "scope name 'one' is used twice"),
        (
            'name = "x"\n' + GOOD_SCOPE.replace("restarts = 0", 'restarts = 0\nreopen_live = "no"'),
            "scopes[0].reopen_live: expected true or false, got 'no'",
        ),
    ],
    ids=[
        "typo",
        "type",
        "missing",
        "capability",
        "method",
        "prompt",
        "client",
        "negative",
        "top-typo",
        "no-scopes",
        "empty",
        "toml",
        "duplicate",
        "reopen-live",
    ],
)
def test_a_bad_bound_file_is_one_line_naming_the_field_and_exit_2(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bad(tmp_path, text)
    with pytest.raises(BoundError, match=None) as e:
        load_bound(str(path))
    assert expected in str(e.value)
    code = main(["check", "--bound", str(path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and expected in err and "Traceback" not in err
