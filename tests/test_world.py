"""``world``: a client drives an agent end to end, and the matrix says whether the user's prompt
reached the model's system slot, in which mode, or where it was lost and why. Without Node: the
repository's scripted client stands in for a real client and the reference agent in its
model-endpoint mode for a real agent; faulty pairings must come out lost (or otherwise), at the
right step, with the right rule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from model.types import PromptCap
from simulations.live.conform_client.conform import scripted_recipe
from simulations.live.conform_client.recipe import load_client_recipe
from simulations.live.recipes.recipes import Recipe
from simulations.live.world import world as w
from simulations.live.world.report import draw_picture, render_page

HERE = Path(".")
UP_TO_REOPEN = ("new", "turn", "reopen")  # the faulty pairings: no fork (a step less to wait for)


def reference(*extra: str) -> Recipe:
    """The reference agent as a recipe: its model calls to ``{endpoint}``, its store in its
    home (every process the client starts is a restart of the same agent)."""
    command = (
        *(sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"),
        *("--store", "{home}/store", "--model-endpoint", "{endpoint}", "--model-environment"),
        *extra,
    )
    return Recipe(name="reference", api="anthropic", command=command, version="0")


def _by_way(cells: list[w.Cell]) -> dict[str, w.Cell]:
    return {c.way: c for c in cells}


def _statuses(cell: w.Cell) -> dict[str, str]:
    return {s.name: s.status for s in cell.steps}


def _running(word: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().decode(errors="replace") if d.name.isdigit() else ""
        except OSError:
            continue
        if word in argv:
            pids.append(int(d.name))
    return pids


def test_a_conforming_pair_reaches_the_slot_in_every_way_and_step(
    tmp_root: Path, tmp_path: Path
) -> None:
    cells, base = w.world(scripted_recipe(), HERE, reference(), HERE)
    assert base.lines and base.context  # its own text learnt, its environment told apart
    by = _by_way(cells)
    assert set(by) == {"none", "append", "override"}
    for way in ("append", "override"):
        cell = by[way]
        assert _statuses(cell) == {
            "new": w.SENT,
            "turn": w.REACHED,
            "reopen": w.REACHED,
            "fork": w.REACHED,
        }, w.cell_json(cell)
        assert cell.outcome.status == w.REACHED and cell.outcome.rule == ""
        new = next(s for s in cell.steps if s.name == "new")
        assert new.where == f"systemPrompt ({way})"
        reopen = next(s for s in cell.steps if s.name == "reopen")
        assert any(r.startswith("session/load [systemPrompt") for r in reopen.opens), reopen
    assert "context stayed" in next(s for s in by["override"].steps if s.name == "turn").where
    assert by["none"].outcome.status == w.REACHED  # the baseline: its own text at every turn
    # the page and the picture, from the same cells
    page = render_page([cells], 12.0, "test", picture="p.png")
    assert "![client × agent × way × step](p.png)" in page
    assert "| scripted (conforming) 0 | reference 0 |" in page
    assert "None: every prompt reached the slot in its mode." in page
    again = [w.cell_from_json(w.cell_json(c)) for c in cells]  # the page redrawn from JSON
    assert [w.cell_json(c) for c in again] == [w.cell_json(c) for c in cells]
    draw_picture([cells], tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_root.iterdir()) == []  # every way's folder removed
    assert _running(str(tmp_root)) == []


def test_a_prompt_the_client_writes_in_meta_is_lost_at_the_first_turn(tmp_root: Path) -> None:
    """The faulty pairing: a client that writes the prompt in _meta.systemPrompt (as acpx
    does) and an agent that reads the standard field only. The matrix must say lost, at the
    turn, and name the client's channel; never reached."""
    client = scripted_recipe("meta-prompt")
    cells, _ = w.world(client, HERE, reference(), HERE, ways=["append"], steps=UP_TO_REOPEN)
    cell = _by_way(cells)["append"]
    out = cell.outcome
    assert out.status == w.LOST, w.cell_json(cell)
    assert out.name == "turn"
    assert "in neither the system slot nor the user message" in out.where
    assert out.rule.startswith("the client's channel: _meta.systemPrompt ({append})")
    assert "prompt-outside" in out.rule
    statuses = _statuses(cell)
    assert statuses["new"] == w.SENT and statuses["reopen"] == w.LOST
    assert statuses["fork"] == w.NOT_RUN
    page = render_page([cells], 1.0, "test")
    assert "**lost** at turn" in page and "## Findings" in page
    assert "--clients scripted (meta-prompt) --agents reference --ways append" in page


def test_an_omitted_prompt_on_reopen_is_lost_there_by_t15(tmp_root: Path) -> None:
    """A client that re-sends no prompt on load (T6) and an agent that then runs the session
    under its default (T15 lets it). The scripted client re-opens the session for every turn
    (each command a new agent process), so the first turn is already lost: at the turn,
    through session/load, T15 named."""
    client = scripted_recipe("no-resend")
    agent = reference("--profile", "v1-default-on-load")
    cells, _ = w.world(client, HERE, agent, HERE, ways=["append"], steps=("new", "turn"))
    cell = _by_way(cells)["append"]
    assert _statuses(cell)["new"] == w.SENT
    turn = next(s for s in cell.steps if s.name == "turn")
    assert turn.opens[0].startswith("session/load [no prompt] ok"), turn.opens
    assert cell.outcome.status == w.LOST and cell.outcome.name == "turn", w.cell_json(cell)
    assert cell.outcome.rule.startswith("T15 and T6: the client re-sent no prompt on session/load")


def test_an_override_that_keeps_the_agents_instructions_is_reached_otherwise(
    tmp_root: Path,
) -> None:
    cells, _ = w.world(
        scripted_recipe(),
        HERE,
        reference("--model-keeps-identity"),
        HERE,
        ways=["override"],
        steps=("new", "turn"),
    )
    out = _by_way(cells)["override"].outcome
    assert out.status == w.OTHERWISE and out.name == "turn", out
    assert out.where.startswith("in the system slot, but 1 of the ")
    assert "You are the reference agent of acp-sysprompt-model" in out.where
    assert out.rule.startswith("T13 (MUST)")


def test_a_client_without_fork_says_not_offered() -> None:
    """acpx has no fork command: the fork step is "not offered", never a loss."""
    acpx = load_client_recipe("acpx")
    assert w._commands("fork", acpx) is None
    assert w._commands("fork", scripted_recipe()) == ("fork", "turn")


@pytest.mark.parametrize(
    ("status", "way", "channel", "in_field", "rule"),
    [
        (w.LOST, "append", "_meta.systemPrompt ({append})", False, "prompt-outside"),
        (w.LOST, "append", "systemPrompt (append)", True, "T9"),
        (w.OTHERWISE, "override", "systemPrompt (override)", True, "T13"),
    ],
)
def test_why_names_the_rule(status: str, way: str, channel: str, in_field: bool, rule: str) -> None:
    attach = w.Open("session/new", channel, True, in_field, "ok", "new")
    where = "appended, not in place" if status == w.OTHERWISE else "in neither"
    said = w.why(status, way, PromptCap.OVERRIDE, attach, attach, None, where)
    assert rule in said
    assert w.why(w.REACHED, way, PromptCap.OVERRIDE, attach, attach, None, "") == ""


def test_a_first_turn_on_a_second_session_is_a_finding() -> None:
    """A client whose first turn re-opens the session, is refused and opens another: the page
    names it (acpx with each real agent), from the turn's record alone."""
    from simulations.live.world.report import second_sessions

    where = (
        "in the system slot beside the agent's own text (3 lines) (on a second session: the "
        "client's session/resume was refused, error -32002: not found, and it opened a new one)"
    )
    steps = [
        w.Step("new", w.SENT, "_meta.systemPrompt ({append})"),
        w.Step("turn", w.REACHED, where),
        w.Step("reopen", w.REACHED, "in the system slot"),
        w.Step("fork", w.NOT_OFFERED, "the client has no fork"),
    ]
    cell = w.Cell("acpx", "1", "agent", "2", "append", "systemPrompt=none", steps, 1.0)
    found = second_sessions([[cell]])
    assert len(found) == 1 and found[0].startswith("**acpx 1: the session its `new` step")
    assert "agent 2 (the client's session/resume was refused, error -32002: not found" in found[0]
    assert second_sessions([[w.cell_from_json(w.cell_json(cell))]]) == found
    same = [steps[0], w.Step("turn", w.REACHED, "in the system slot"), *steps[2:]]
    plain = w.Cell("acpx", "1", "agent", "2", "append", "", same, 1.0)
    assert second_sessions([[plain]]) == []
