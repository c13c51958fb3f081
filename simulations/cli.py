"""``acp-sysprompt``: the command line over the library API (``simulations.api``).

Scope
    ``check`` prints a table id → holds / violated / n/a with, for each violation, the
    shortest transcript the engine found. ``explore`` writes the reachable-state graph (PNG,
    SVG, GraphML, DOT), the machines drawn from their tables and a coverage report;
    ``counterexample`` writes one counterexample in five forms (steps, JSON-RPC transcript,
    Mermaid, PR review block, ITF trace; a mutant's goes on with the steps after which the
    wire shows it, ``simulations.outputs.forms.shown_on_the_wire``), of a revision, a mutant,
    a profile (with a client) or one member of an amendment's or a revision's population, and
    ``check --out`` writes every ✗ so; ``replay`` re-runs an ITF trace (a member's, a
    profile's and a client's tables rebuilt from what its ``#meta`` names); ``report``
    writes the reviewer's report; ``list`` names the revisions, mutants, engines and bounds;
    ``bound`` shows a bound and ``cache`` the answers kept across runs. ``conform``,
    ``conform-client`` and ``validate`` judge live programs and logs (``simulations.live``).

    This module assembles the parser, runs ``main`` and dispatches; each command's options
    and run live in ``simulations.commands.<command>`` (``list`` in ``listing``; ``check``
    with ``population`` and ``check_out``; ``conform`` holds ``replay -- AGENT_CMD`` too),
    what they share in ``simulations.commands.common``, ``progress`` and ``subjects``.
    ``validate`` and ``conform-client`` own their parsers (``simulations.live.validate.validate``,
    ``simulations.live.conform_client.conform``).

    Exit codes (``docs/exit-codes.md``): 0 when every rule that binds the parties (R, S, T, A
    ids; a SHOULD is advisory) holds; 1 when one is violated (with ``--strict``, a violated P id
    too; with ``--mutant``, also when the id the mutant declares is violated, whatever its
    family); 2 on bad usage or a file that cannot be read (``model.files``), with a one-line
    message — also when standard output cannot be written (a full disk, ``/dev/full``: not a
    fault of this tool), and for an output ``conform`` cannot write
    (``simulations.live.conform.command.CONFORM_EXITS``); 3 for a fault of this tool, every command
    alike: one line naming the file its traceback went to (``simulations.usage.internal_error``);
    130 when interrupted.

Abstractions
    Long explorations show a progress line with states/s on a terminal; Ctrl-C stops them,
    keeps what was found, writes it, and exits 130. Before one starts, a bound estimated past
    ``simulations.engines.size.WARN_STATES`` states gets a one-line warning on stderr naming
    the dimension that explodes (kept under ``--quiet``: a warning, not progress).
    ``conform`` and a live ``replay`` take Ctrl-C and SIGTERM as a flag for their whole run
    (``simulations.live.conform.options.interrupts``): 130 wherever it lands, the report
    still printed and written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from simulations.api import UsageError
from simulations.commands import (
    bound,
    cache,
    check,
    counterexample,
    explore,
    listing,
    replay,
    report,
)
from simulations.commands.common import (
    CACHE,
    CLUSTER,
    OUTPUT_FAILED,
    STARTED,
    Interrupted,
    Parser,
    use_cache,
)
from simulations.live.conform import command as conform
from simulations.live.conform_client import conform as client_conform
from simulations.live.validate import validate
from simulations.usage import INTERRUPTED, OutputFailed, internal_error


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="acp-sysprompt", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    check.add_parser(sub)
    explore.add_parser(sub)
    counterexample.add_parser(sub)
    replay.add_parser(sub)
    conform.add_parser(sub)
    report.add_parser(sub)
    cache.add_parser(sub)
    bound.add_parser(sub)
    validate.add_parser(sub)
    client_conform.add_parser(sub)
    listing.add_parser(sub)
    return p


class _Stdout:
    """``sys.stdout`` while ``main`` runs: the same stream, whose write errors are told
    apart from those of the files a command writes (a closed pipe stays BrokenPipeError)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return int(self._inner.write(text))
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputFailed(e) from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputFailed(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _drop_stdout() -> None:
    """Point the stdout file descriptor at /dev/null: the interpreter's last flush of what
    is still buffered then succeeds, and prints no "Exception ignored" at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    STARTED.append(time.monotonic())
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe or a full disk shows up here, not at interpreter exit
        return code
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        _drop_stdout()
        return 0
    except OutputFailed as e:
        _drop_stdout()
        print(f"acp-sysprompt: error: cannot write to standard output: {e}", file=sys.stderr)
        return OUTPUT_FAILED
    except KeyboardInterrupt:  # a command with no interrupt of its own (validate, list): one line
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception:  # a fault of this tool: never exit 1, which says a rule was violated
        return internal_error()
    finally:
        CACHE.close()  # the cache ``use_cache`` turned on ends with the command
        CLUSTER.close()  # the cluster ``--cluster`` attached (a local one is stopped)
        sys.stdout = stdout
        STARTED.pop()


def _main(argv: Sequence[str] | None) -> int:
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        agent: list[str] = []
        if "--" in words:  # conform and replay: the agent's own command line follows
            cut = words.index("--")
            words, agent = words[:cut], words[cut + 1 :]
        args = parser().parse_args(words)
        if agent and args.command not in ("conform", "replay"):
            raise UsageError("argument AGENT_CMD: only conform and replay take '-- AGENT_CMD'")
        args.agent = agent
        if args.command == "cache":
            return cache.run(args)
        use_cache(args)
        if args.command == "list":
            return listing.run(args)
        if args.command == "bound":
            return bound.run(args)
        if args.command == "conform-client":
            return client_conform.run(args)
        if args.command == "validate":
            return validate.run(args)
        if args.command == "explore":
            return explore.run(args)
        if args.command == "counterexample":
            return counterexample.run(args)
        if args.command == "replay" and args.agent:
            return conform.run_live_replay(args)
        if args.command == "replay":
            return replay.run(args)
        if args.command == "conform":
            return conform.run(args)
        if args.command == "report":
            return report.run(args)
        found = check.search(args)
        if isinstance(found, int):  # a population's or --compare's: printed already
            return found
    except UsageError as e:
        print(f"acp-sysprompt: error: {e}", file=sys.stderr)
        return 2
    except Interrupted:
        print("acp-sysprompt: interrupted before the run started", file=sys.stderr)
        return INTERRUPTED
    return check.show(args, found)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
