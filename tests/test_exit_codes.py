"""One meaning per exit code (docs/exit-codes.md): a fault of this tool is 3 for every command,
one line naming the file its traceback went to — never 1, which says a rule was violated."""

from __future__ import annotations

import argparse
import types
from pathlib import Path

import pytest

import simulations.cli as cli
from simulations.usage import INTERNAL_ERROR, INTERRUPTED, traceback_folder

# each command of acp-sysprompt, a valid command line for it, and the function its run reaches
# first (where the planted fault goes)
COMMANDS: dict[str, tuple[list[str], types.ModuleType, str]] = {
    "check": (["check", "--bound", "tiny"], cli.check, "search"),
    "explore": (["explore", "--bound", "tiny", "--out", "OUT"], cli.explore, "run"),
    "counterexample": (
        ["counterexample", "--id", "R16", "--out", "OUT"],
        cli.counterexample,
        "run",
    ),
    "replay": (["replay", "TRACE"], cli.replay, "run"),
    "report": (["report", "--out", "OUT"], cli.report, "run"),
    "list": (["list"], cli.listing, "run"),
    "bound": (["bound", "show", "tiny"], cli.bound, "run"),
    "cache": (["cache", "info"], cli.cache, "run"),
    "conform": (["conform", "--", "true"], cli.conform, "run"),
    "validate": (["validate", "LOG"], cli.validate, "run"),
    "conform-client": (["conform-client", "--recipe", "acpx"], cli.client_conform, "run"),
}


def test_every_command_is_listed() -> None:
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_fault_of_the_tool_is_exit_3_with_one_line_naming_the_traceback(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv, module, name = COMMANDS[command]
    argv = [str(tmp_path / a) if a in ("OUT", "TRACE", "LOG") else a for a in argv]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("ACP_SYSPROMPT_CACHE", "off")

    def fault(*_: object, **__: object) -> int:
        raise RuntimeError("a planted fault")

    monkeypatch.setattr(module, name, fault)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == INTERNAL_ERROR, err
    (line,) = err.strip().splitlines()
    assert line.startswith("acp-sysprompt: internal error: RuntimeError: a planted fault"), line
    (written,) = traceback_folder().glob("traceback-*.txt")
    assert str(written) in line
    assert "Traceback" in written.read_text() and written.stat().st_mode & 0o077 == 0


def test_where_no_file_can_be_written_the_traceback_goes_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state").write_text("")  # a file where the folder would be
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    def fault(*_: object, **__: object) -> int:
        raise RuntimeError("a planted fault")

    monkeypatch.setattr(cli.listing, "run", fault)
    assert cli.main(["list"]) == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].endswith(
        "(a fault of acp-sysprompt; the traceback is above): exit 3"
    ), err


# ---- the page is the table: every command's bad usage and interrupt, run ------------------------

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "exit-codes.md"
LIVE_REPLAY = "replay FILE -- AGENT_CMD"
AGENT = "python -m simulations.agent"
NONE = "—"  # a code the command never gives


def page_table() -> dict[str, dict[int, str]]:
    """docs/exit-codes.md's table "Every command": command → {code: what it means there}."""
    section = PAGE.read_text(encoding="utf-8").split("\n## Every command\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    lines = section.splitlines()
    head = next(x for x in lines if x.startswith("| command |"))
    codes = [int(c) for c in (c.strip() for c in head.strip().strip("|").split("|")[1:])]
    table = {}
    for line in lines:
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            assert len(cells) == len(codes) + 1, line
            table[cells[0].strip("`")] = dict(zip(codes, cells[1:], strict=True))
    return table


def test_the_page_has_a_row_for_every_command_and_a_section_for_each() -> None:
    """Before: no table read the page; a command added without its codes went unseen."""
    table = page_table()
    assert set(table) == {*COMMANDS, LIVE_REPLAY, AGENT}
    body = PAGE.read_text(encoding="utf-8").split("\n## Every command\n", 1)[1]
    body = body.split("\n## ", 1)[1]  # past the table: each command said again, in words
    for command, codes in table.items():
        assert codes[2] != NONE and codes[130] != NONE, command  # every one: bad usage, Ctrl-C
        assert f"`{command.split(' FILE')[0]}" in body, f"no section or line for {command}"
        if command in COMMANDS:  # a fault of the tool: 3 (the test above plants one)
            assert codes[3] == "internal error", command
    # 4 is a live run cut by --budget, and nothing else
    assert {c for c, codes in table.items() if codes[4] != NONE} == {"conform", "conform-client"}


# each command with an argument it refuses (a value, not the parser's: the command's own check)
BAD_USAGE: dict[str, list[str]] = {
    "check": ["check", "--bound", "nosuch"],
    "explore": ["explore", "--bound", "nosuch", "--out", "OUT"],
    "counterexample": ["counterexample", "--id", "NOPE", "--out", "OUT"],
    "replay": ["replay", "TRACE"],
    LIVE_REPLAY: ["replay", "TRACE", "--", "true"],
    "report": ["report", "--bound", "nosuch", "--out", "OUT"],
    "list": ["list", "--", "x"],
    "bound": ["bound", "show", "nosuch"],
    "cache": ["cache", "nosuch"],
    "conform": ["conform", "--repeat", "0", "--", "true"],
    "validate": ["validate", "LOG"],
    "conform-client": ["conform-client", "--recipe", "nosuch"],
}


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    (line,) = err.strip().splitlines()
    return line


@pytest.mark.parametrize("command", sorted(BAD_USAGE))
@pytest.mark.parametrize("how", ["its-own-check", "unknown-option"])
def test_bad_usage_is_exit_2_in_one_line(
    command: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert page_table()[command][2] == "bad usage"
    monkeypatch.setenv("ACP_SYSPROMPT_CACHE", "off")
    argv = BAD_USAGE[command]
    if how == "unknown-option":
        agent = argv.index("--") if "--" in argv else len(argv)
        argv = [*argv[:agent], "--no-such-option", *argv[agent:]]
    argv = [str(tmp_path / a) if a in ("OUT", "TRACE", "LOG") else a for a in argv]
    code = cli.main(argv)
    line = _one_error_line(capsys.readouterr().err)
    assert code == 2, (code, line)
    assert line.startswith("acp-sysprompt: error: "), line


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_interrupt_is_exit_130_in_one_line(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C where each command's run begins: 130, one line, no traceback (a live run's
    own interrupts, with the report of the tests that ran: tests/test_incomplete.py)."""
    assert page_table()[command][130].startswith("interrupted")
    argv, module, name = COMMANDS[command]
    argv = [str(tmp_path / a) if a in ("OUT", "TRACE", "LOG") else a for a in argv]
    monkeypatch.setenv("ACP_SYSPROMPT_CACHE", "off")

    def ctrl_c(*_: object, **__: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, name, ctrl_c)
    code = cli.main(argv)
    line = _one_error_line(capsys.readouterr().err)
    assert code == INTERRUPTED, (code, line)
    assert line.startswith("acp-sysprompt: interrupted"), line


def test_a_live_replay_interrupted_is_exit_130_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from simulations.live.conform import conform as live

    assert page_table()[LIVE_REPLAY][130].startswith("interrupted")

    def ctrl_c(*_: object, **__: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(live, "replay_live", ctrl_c)
    code = cli.main(["replay", str(tmp_path / "t.itf.json"), "--", "true"])
    line = _one_error_line(capsys.readouterr().err)
    assert code == INTERRUPTED and line == "acp-sysprompt: interrupted", (code, line)


def test_the_reference_agent_exits_2_on_bad_usage_and_130_on_ctrl_c(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from simulations.live.reference import stdio

    codes = page_table()[AGENT]
    assert codes[2] == "bad usage" and codes[130] == "interrupted"
    for argv in (["--revision", "nosuch"], ["--no-such-option"], ["--store", "/dev/null"]):
        assert stdio.main(argv) == 2, argv
        line = _one_error_line(capsys.readouterr().err)
        assert line.startswith(f"{AGENT}: error: "), line

    def ctrl_c(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(stdio, "serve", ctrl_c)
    assert stdio.main([]) == INTERRUPTED
    assert "Traceback" not in capsys.readouterr().err


def test_a_fault_of_the_reference_agent_is_3_and_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fault of the agent's own, while it starts or while it serves: 3 and one line naming
    the traceback's file, as the page's row says (it exited 1 with a traceback before)."""
    from simulations.live.reference import stdio

    assert page_table()[AGENT][3] == "internal error"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    def fault(*_: object, **__: object) -> None:
        raise RuntimeError("a planted fault")

    for where in ("serve", "ReferenceAgent"):
        with monkeypatch.context() as m:
            m.setattr(stdio, where, fault)
            assert stdio.main([]) == INTERNAL_ERROR, where
        err = capsys.readouterr().err  # serving: its start-up line, then the fault's
        assert "Traceback" not in err, err
        line = err.strip().splitlines()[-1]
        assert line.startswith("acp-sysprompt: internal error: RuntimeError: a planted fault")
