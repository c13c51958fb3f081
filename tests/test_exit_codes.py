"""One meaning per exit code (docs/exit-codes.md): a fault of this tool is 3 for every command,
one line naming the file its traceback went to — never 1, which says a rule was violated."""

from __future__ import annotations

import argparse
import types
from pathlib import Path

import pytest

import simulations.cli as cli
from simulations.usage import INTERNAL_ERROR, traceback_folder

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
