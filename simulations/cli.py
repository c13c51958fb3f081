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
    writes the reviewer's report; ``list`` names the revisions, mutants, engines and bounds.

    Exit codes: 0 when every rule that binds the parties (R and S ids) holds; 1 when one is
    violated (with ``--strict``, a violated P id too; with ``--mutant``, also when the id the
    mutant declares is violated, whatever its family); 2 on bad usage or a file that cannot be
    read (``model.files``), with a one-line message — also when standard output cannot be
    written (a full disk, ``/dev/full``: not a fault of this tool); 130 when interrupted.
    ``conform`` and ``replay … -- AGENT_CMD`` also give 3 for a fault of this tool (after the
    verdict, with its traceback), and 2 for an output that cannot be written
    (``CONFORM_EXITS``).

Abstractions
    Long explorations show a progress line with states/s on a terminal; Ctrl-C stops them,
    keeps what was found, writes it, and exits 130. Before one starts, a bound estimated past
    ``simulations.engines.size.WARN_STATES`` states gets a one-line warning on stderr naming
    the dimension that explodes (kept under ``--quiet``: a warning, not progress).
    ``conform`` and a live ``replay`` take Ctrl-C and SIGTERM as a flag for their whole run
    (``simulations.live.conform.options.interrupts``): 130 wherever it lands, the report still
    printed and written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Collection, Sequence
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from model.amend import Amendment, AmendmentError, load_amendment
from model.files import shown
from model.invariants import NOT_CHECKED
from model.population import POPULATIONS, Member, Population, describe, population_of
from model.profiles import Profile, ProfileError, load_client, load_profile, pair
from model.revisions import REVISIONS, resolve
from model.spec import REQUIREMENTS, Family
from model.tables import Tables
from simulations.api import (
    ENGINES,
    VIOLATED,
    CheckResult,
    UsageError,
    advertised,
    advisory,
    bound_for,
    check,
    diff_json,
    keeps_promise,
    listing,
    refuse_other_revision,
    render,
    render_diff,
    restarts_default,
    revision_for,
    tables_for,
    to_json,
    verdict_diff,
    with_causes,
)
from simulations.engines import cache as user_cache
from simulations.engines import cluster, share
from simulations.engines.bounds import (
    BOUNDS,
    Bound,
    BoundError,
    bound_toml,
    limits_text,
    load_bound,
)
from simulations.engines.domain import DEFAULT_DOMAIN
from simulations.engines.exploration import id_order
from simulations.engines.explore import coverage, explore, labelled
from simulations.engines.size import Estimate, estimate, warning
from simulations.engines.through import (
    THROUGH_HELP,
    combined,
    events_arg,
    labels,
    shortest_through,
    through_all,
)
from simulations.engines.trace import Trace, render_steps, replay
from simulations.live.conform_client import conform as client_conform
from simulations.live.validate import validate
from simulations.outputs.population import (
    AmendmentReport,
    Clock,
    PopulationCheck,
    check_population,
    member_named,
    population_json,
    render_population,
    rule_checks,
)
from simulations.wire.acp import meta_methods, revision_wire, wire_fields

if TYPE_CHECKING:
    from simulations.live.conform.expectations import Expectations
    from simulations.live.conform.options import Interrupt
    from simulations.live.conform.report import Report
    from simulations.live.recipes.recipes import Recipe
    from simulations.outputs.paste import Subject

INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


WORKERS = min(2, os.cpu_count() or 1)  # this machine has 2 cores; a bound has 1 to 4 scopes


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="acp-sysprompt", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def target(c: argparse.ArgumentParser) -> None:
        c.add_argument(
            "--revision",
            default=None,
            help=f"{', '.join(REVISIONS)} (default: the mutant's revision, else rfd-final)",
        )
        c.add_argument("--mutant", default=None)

    def bfs(c: argparse.ArgumentParser, default: str = "default") -> None:
        c.add_argument(
            "--bound",
            default=default,
            help=f"{', '.join(BOUNDS)} or a FILE.toml ('bound show NAME' prints one to start "
            f"from; default {default})",
        )
        c.add_argument(
            "--no-symmetry", action="store_true", help="explore without symmetry reduction"
        )
        c.add_argument(
            "--workers",
            type=_positive,
            default=WORKERS,
            help=f"processes exploring the bound's scopes side by side (default {WORKERS}; "
            "the result is the same as with 1)",
        )
        c.add_argument("--progress", action="store_true", help="show progress even off a terminal")
        c.add_argument("--quiet", action="store_true", help="no progress line")
        cached(c)

    def cached(c: argparse.ArgumentParser, off: bool = True) -> None:
        one = c.add_mutually_exclusive_group()
        one.add_argument(
            "--cache",
            type=Path,
            default=None,
            metavar="DIR",
            help="the folder of answers remembered across runs (default: $ACP_SYSPROMPT_CACHE, "
            f"else {user_cache.default_folder()})",
        )
        if off:
            one.add_argument(
                "--no-cache", action="store_true", help="search everything; remember nothing"
            )

    c = sub.add_parser("check", help="check a revision (or a mutant) and print verdicts")
    target(c)
    c.add_argument(
        "--profile",
        default=None,
        help="an implementation profile: a shipped name or a .toml/.json file (see README)",
    )
    c.add_argument(
        "--client",
        default=None,
        help="a client profile driving the agent (--profile, else the revision's reference "
        "agent): a shipped name or a .toml/.json file (see README)",
    )
    c.add_argument(
        "--amend",
        default=None,
        help="a spec amendment: a shipped name (see 'list') or a .toml file; prints the "
        "verdict diff against its base and exits 1 if it does not keep its claims",
    )
    c.add_argument(
        "--compare",
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="two designs side by side on the same bound, per P id: each a revision (one that "
        "leaves choices open over its population), an amendment or proposal, or a profile (a "
        "shipped name or a .toml file); exits 0 once both are judged (docs/cli.md)",
    )
    c.add_argument("--engine", default="bfs", help=f"{', '.join(ENGINES)} (default bfs)")
    bfs(c)
    c.add_argument("--seed", type=_seed, default=0)
    c.add_argument(
        "--examples", type=_positive, default=200, help="Hypothesis examples (default 200)"
    )
    c.add_argument("--steps", type=_positive, default=50, help="steps per example (default 50)")
    c.add_argument(
        "--restarts",
        choices=("any", "same"),
        default=None,
        help="'same': the agent keeps its capability profile across restarts; 'any': a "
        "restart may bring another (default: same with --profile, which describes one build; "
        "else any)",
    )
    c.add_argument(
        "--strict",
        action="store_true",
        help="a violated P id (with a population: a P id some pair loses) also exits 1",
    )
    c.add_argument(
        "--reference",
        action="store_true",
        help="a revision that leaves choices open (v1-stable) is checked over every agent and "
        "client it allows; this checks its reference build alone",
    )
    c.add_argument(
        "--through",
        type=events_arg,
        default=(),
        metavar="EVENTS",
        help="each violated id's counterexample: " + THROUGH_HELP + " (--engine bfs, one "
        "exploration: not with --amend or a population)",
    )
    c.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS|local:N",
        help="spread the searches over a Dask cluster: a scheduler's ADDRESS, or local:N to "
        "start N worker processes here (needs the cluster extra; the answer is the same)",
    )
    c.add_argument("--json", action="store_true")
    c.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write each ✗ in the five forms of counterexample: DIR/<id>/ for one build; for a "
        "population or an amendment DIR/<id>-<choices>/, one per heading 'lost where'",
    )

    e = sub.add_parser("explore", help="write the reachable-state graph, pictures and coverage")
    target(e)
    bfs(e, default="small")
    e.add_argument("--out", required=True, type=Path, help="directory to write into")
    e.add_argument("--id", default=None, help="highlight this id's shortest counterexample")
    e.add_argument(
        "--max-nodes", type=_positive, default=300, help="draw a quotient graph past this size"
    )

    x = sub.add_parser("counterexample", help="write one shortest counterexample in five forms")
    target(x)
    bfs(x)
    x.add_argument("--id", required=True, help="the requirement id, e.g. R16 or P3")
    x.add_argument("--out", required=True, type=Path, help="directory to write into")
    x.add_argument("--through", type=events_arg, default=(), metavar="EVENTS", help=THROUGH_HELP)
    x.add_argument(
        "--amend",
        default=None,
        help="an amendment (a shipped name or a .toml file): a member of the population it "
        "allows (--member; default: the first member, reference build first, that violates --id)",
    )
    x.add_argument(
        "--member",
        default=None,
        help="a member of the population of --amend or of a revision that leaves choices open, "
        "named as check prints it: 'on_omit=stored, on_differ=keep, ...'; the choices that "
        "matter are enough: a choice not named takes the reference build's value ('reference': "
        "the reference build)",
    )
    x.add_argument(
        "--profile", default=None, help="an implementation profile: a shipped name or a file"
    )
    x.add_argument(
        "--client", default=None, help="a client profile driving the agent: a name or a file"
    )

    r = sub.add_parser("replay", help="re-run a trace.itf.json and show what it violates")
    r.add_argument("file", type=Path)
    r.add_argument("--revision", default=None, help="override the revision the trace names")
    r.add_argument(
        "--mutant",
        default=None,
        help="override the mutant the trace names ('none': the revision itself)",
    )
    r.add_argument(
        "--profile",
        default=None,
        help="replay against this implementation profile (default: the one the trace names)",
    )

    r.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="with '-- AGENT_CMD ...': replay against that live agent; seconds per answer "
        "(0.05–3600; exit 0 not reproduced, 1 reproduced, 2 usage, 3 internal error, 130 "
        "Ctrl-C)",
    )
    _conform_parser(sub)

    rp = sub.add_parser("report", help="write the verdict matrix, counterexamples, kill matrix")
    rp.add_argument("--out", required=True, type=Path, help="directory to write into")
    rp.add_argument("--bound", default="default", help=f"{', '.join(BOUNDS)} (default default)")
    rp.add_argument(
        "--no-kill-matrix", action="store_true", help="skip the mutant × engine runs (~2 min)"
    )
    rp.add_argument(
        "--jobs",
        type=int,
        default=WORKERS,
        help=f"processes for the scopes and the kill matrix (default {WORKERS})",
    )
    rp.add_argument("--quiet", action="store_true", help="no progress lines")
    cached(rp)

    ca = sub.add_parser("cache", help="the answers remembered across runs: info, clear")
    ca.add_argument("action", choices=("info", "clear"))
    cached(ca, off=False)
    ca.add_argument("--json", action="store_true")

    bd = sub.add_parser(
        "bound",
        help="print a bound as the TOML file --bound FILE.toml reads",
        description="Print a bound as the TOML file --bound FILE.toml reads. A bound file "
        f"asks for {limits_text()} (per scope; blocks per prompt; scopes and envelope scopes "
        "each); past a limit it is refused in one line naming the field.",
    )
    bd.add_argument("action", choices=("show",))
    bd.add_argument("name", help=f"{', '.join(BOUNDS)} or a FILE.toml (checked, then printed)")

    validate.add_parser(sub)
    client_conform.add_parser(sub)

    ls = sub.add_parser("list", help="list revisions, mutants, engines and bounds")
    ls.add_argument("--json", action="store_true")
    return p


def _duration(seconds: float) -> str:
    """``1h 02m``, ``3m 05s`` or ``42s``."""
    n = round(seconds)
    if n >= 3600:
        return f"{n // 3600}h {n % 3600 // 60:02d}m"
    return f"{n // 60}m {n % 60:02d}s" if n >= 60 else f"{n}s"


PIPED_EVERY = 5.0  # seconds between two progress lines where stderr is no terminal


class _Emitter:
    """Where progress goes: on a terminal one line rewritten in place; elsewhere (stderr
    piped or sent to a file, a CI log) a line of its own every ``PIPED_EVERY`` seconds, so a
    long run is never silent and a log is not flooded."""

    def __init__(self, forced: bool = False) -> None:
        self.tty = forced or sys.stderr.isatty()  # --progress: as on a terminal
        self.shown = False
        self._last = time.monotonic()

    def emit(self, text: str) -> None:
        if self.tty:
            sys.stderr.write(f"\r{text}\x1b[K")
        else:
            now = time.monotonic()
            if now - self._last < PIPED_EVERY:
                return
            self._last = now
            sys.stderr.write(f"acp-sysprompt: progress: {text}\n")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\n")


class _ProgressLine:
    """A one-line progress report on stderr: states, transitions checked, depth, states/s, ETA.

    The ETA is the states still expected (``expected``, the bound's size estimate of
    ``simulations.engines.size`` with every scope sampled) over the rate so far; "≥" where the
    estimate is a floor. With no estimate, or past it (the guess may be ~2.7× low), it says
    "ETA unknown" and why. A counterexample search stops at its id: its ETA is the whole
    bound's, an upper one. A guide, never a promise.
    """

    def __init__(self, what: str, expected: Estimate | None = None, forced: bool = False) -> None:
        self.what = what
        self.expected = expected
        self.out = _Emitter(forced)

    def eta(self, states: int, seconds: float) -> str:
        est = self.expected
        if est is None or est.unguessed:
            return "ETA unknown (no size estimate)"
        if states >= est.states:
            return f"ETA unknown (past the estimate of ~{est.states:,} states)"
        if states <= 0 or seconds <= 0:
            return f"~{est.states:,} states expected, ETA unknown (no rate yet)"
        left = (est.states - states) * seconds / states
        about = "≥ " if est.at_least else "~"
        return f"~{est.states:,} states expected, ETA {about}{_duration(left)}"

    def __call__(self, states: int, transitions: int, depth: int, seconds: float) -> None:
        rate = states / seconds if seconds > 0 else 0.0
        self.out.emit(
            f"{self.what}: {states:,} states  {transitions:,} transitions checked  "
            f"depth {depth}  {rate:,.0f} states/s  {seconds:.1f}s  {self.eta(states, seconds)}  "
            "(Ctrl-C stops and keeps what was found)"
        )

    def done(self) -> None:
        self.out.done()


def _shows_progress(args: argparse.Namespace) -> bool:
    """Progress rewritten on a terminal (or forced by --progress): worth the size estimate's
    per-scope sampling that gives it an ETA."""
    return not args.quiet and bool(args.progress or sys.stderr.isatty())


def _progress(
    args: argparse.Namespace, what: str, expected: Estimate | None = None
) -> _ProgressLine | None:
    """The run's progress line: on a terminal, or every few seconds where stderr is piped
    (``_Emitter``); none under --quiet."""
    return None if args.quiet else _ProgressLine(what, expected, bool(args.progress))


def _announce(args: argparse.Namespace, bound: Bound) -> None:
    """Before a run: the bound it explores (stderr; --quiet drops it)."""
    if not args.quiet:
        print(f"acp-sysprompt: {bound.headline()}", file=sys.stderr, flush=True)


class _Interrupted(Exception):
    """Ctrl-C before a run started (while its size was estimated): exit 130, nothing written."""


def _say(line: str) -> None:
    print(f"acp-sysprompt: {line}", file=sys.stderr, flush=True)


def _warn_size(
    bound: Bound, tables: Tables, symmetry: bool, keep: str | None = None, single: bool = False
) -> Estimate:
    """Before a run: one line on stderr if the bound may be too big (``simulations.engines.size``;
    ``keep``: what the run keeps, default the bound's), and the estimate, for the progress
    line's ETA (``single``: every scope sampled, as that needs). Printed under ``--quiet``
    too: it is a warning, not progress."""
    try:
        est = estimate(tables, bound, symmetry, keep=keep, single=single)
    except KeyboardInterrupt:
        raise _Interrupted from None
    line = warning(est)
    if line is not None:
        print(f"acp-sysprompt: {line}", file=sys.stderr, flush=True)
    return est


def _out_dir(path: Path) -> Path:
    if path.exists() and not path.is_dir():  # mkdir would say "File exists"
        raise UsageError(f"argument --out: {shown(str(path), 200)}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"argument --out: cannot create {str(path)!r}: {e.strerror}") from None
    return path


def _id(rid: str, revision: str) -> str:
    if rid not in REQUIREMENTS:
        raise UsageError(
            f"argument --id: unknown requirement id {shown(rid)} (see docs/REQUIREMENTS.md)"
        )
    if not resolve(revision).states(rid):  # its verdict is n/a: nothing to find or highlight
        raise UsageError(
            f"argument --id: {rid} is not a rule of {revision} "
            f"(`acp-sysprompt check --revision {revision}` lists its ids)"
        )
    if rid in NOT_CHECKED:  # a reason true of the revisions that state it
        raise UsageError(f"argument --id: {rid} is not checked: {NOT_CHECKED[rid]}")
    return rid


def _run_explore(args: argparse.Namespace) -> int:
    from simulations.outputs.pictures import draw_graph, draw_machines, write_dot, write_graphml

    args.revision = revision_for(args.revision, args.mutant)
    tables = tables_for(args.revision, args.mutant)
    bound = bound_for(args.bound, args.revision)
    rid = _id(args.id, args.revision) if args.id else None
    out = _out_dir(args.out)
    _announce(args, bound)
    shows = _shows_progress(args)  # explore draws the graph: it keeps one
    est = _warn_size(bound, tables, not args.no_symmetry, keep="graph", single=shows)
    line = _progress(args, f"explore {bound.name}", est)
    ex = explore(tables, bound, symmetry=not args.no_symmetry, progress=line, workers=args.workers)
    if line is not None:
        line.done()
    violated = [r for r in ex.violated if resolve(args.revision).states(r)]
    if rid is None and violated:
        rules = [r for r in violated if REQUIREMENTS[r].family is not Family.P and not advisory(r)]
        rid = (rules or [r for r in violated if not advisory(r)] or violated)[0]
    path = ex.nodes_on(rid) if rid is not None and rid in ex.first else None
    g = labelled(ex, args.revision, args.mutant, fields=wire_fields(revision_wire(args.revision)))
    what = f"mutant {args.mutant} of {args.revision}" if args.mutant else args.revision
    title = f"{what}: bound {bound.name}" + (f", shortest counterexample of {rid}" if path else "")
    drawn = draw_graph(g, out / "graph.png", out / "graph.svg", path, args.max_nodes, title)
    write_graphml(g, out / "graph.graphml")
    write_dot(g, out / "graph.dot")
    cov = coverage(ex)
    cov["ids_violated"] = violated  # only the ids the revision states
    cov["highlighted"] = rid if path else None
    cov["drawn"] = dict(drawn)
    cov["seconds"] = round(ex.seconds, 3)
    (out / "coverage.json").write_text(json.dumps(cov, indent=2) + "\n", encoding="utf-8")
    machines = draw_machines(tables, out)
    rate = ex.states / ex.seconds if ex.seconds > 0 else 0.0
    print(
        f"explored {what}, bound {bound.name}: {ex.states:,} states, {ex.edges:,} edges, "
        f"depth {ex.depth}, {ex.transitions:,} transitions checked in {ex.seconds:.1f}s "
        f"({rate:,.0f} states/s){'' if ex.complete else ' — INTERRUPTED, partial'}"
    )
    print(f"violated: {', '.join(violated) or 'none'}")
    if cov["rows_never_fired"]:
        print(f"rows that never fired: {len(cov['rows_never_fired'])} (see coverage.json)")
    names = ["graph.png", "graph.svg", "graph.graphml", "graph.dot", "coverage.json"]
    print(f"wrote {', '.join(str(out / n) for n in names)} and {len(machines)} machine pictures")
    return 0 if ex.complete else INTERRUPTED


def _counterexample_inputs(args: argparse.Namespace) -> tuple[Profile | None, Amendment | None]:
    """``counterexample``'s agent profile (paired with ``--client``, over ``--mutant``) or
    amendment; a combination that names no one build is one line, exit 2."""
    if args.member is not None and (args.profile or args.client or args.mutant):
        raise UsageError(
            "argument --member: a member is one build of a population (--amend, or a revision "
            "that leaves choices open), not of --profile, --client or --mutant"
        )
    if args.amend is not None:
        if args.profile or args.client or args.mutant:
            raise UsageError(
                "argument --amend: an amendment is checked on its own (no --mutant, --profile "
                "or --client)"
            )
        try:
            amendment = load_amendment(args.amend)
        except AmendmentError as e:
            raise UsageError(f"argument --amend: {e}") from None
        if args.revision is not None and revision_for(args.revision) != amendment.base:
            raise UsageError(
                f"argument --amend: {amendment.name} amends {amendment.base}, not "
                f"{revision_for(args.revision)} (drop --revision)"
            )
        return None, amendment
    return _agent_profile(args), None


def _agent_profile(args: argparse.Namespace) -> Profile | None:
    """``--profile`` read (and held to ``--revision``, before the bound is announced), paired
    with ``--client``, over ``--mutant``: the one agent and client ``check`` and
    ``counterexample`` are given; None where neither profile is."""
    profile = None
    if args.profile is not None:
        try:
            profile = load_profile(args.profile)
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
        refuse_other_revision(profile, args.revision)
    if args.client is not None:
        try:
            rev = revision_for(args.revision, args.mutant) if profile is None else None
            profile = pair(profile, load_client(args.client), rev)
        except ProfileError as e:
            raise UsageError(f"argument --client: {e}") from None
    if profile is not None and args.mutant is not None:  # the knobs over the mutant
        try:
            profile = profile.with_mutant(args.mutant)
        except ProfileError as e:
            raise UsageError(f"argument --mutant: {e}") from None
    return profile


def _subject(
    args: argparse.Namespace,
    revision: str,
    profile: Profile | None,
    amendment: Amendment | None,
    member: Member | None,
) -> Subject | None:
    """What review.md's heading names and the ITF keeps for ``replay``, past the revision and
    the mutant: an amendment's member (its reference build by default), a population's member,
    a profile read from a file, a client profile. None where the revision says it all."""
    from model.amend import AMENDMENTS, PROPOSALS
    from model.profiles import CLIENTS, PROFILES
    from simulations.outputs.paste import Subject, subject_of
    from simulations.wire.acp import meta_methods

    def named(kind: str, name: str, spec: str, shipped: Collection[str]) -> str:
        return f"{kind} `{name}`" + ("" if spec in shipped else f" (file `{spec}`)")

    if amendment is not None or member is not None:
        pop = amendment.population() if amendment is not None else population_of(revision)
        member = member or pop.reference_member
        ref = " (its reference build)" if member == pop.reference_member else ""
        of = subject_of(revision)
        if amendment is not None:
            shipped = {**AMENDMENTS, **PROPOSALS}
            of = f"{named('amendment', amendment.name, args.amend, shipped)} of {of}"
        return Subject(
            f"member `{describe(member)}`{ref} of {of}",
            (("amendment", args.amend),) * (amendment is not None) + (("member", dict(member)),),
            f"The trace names the member; `replay` rebuilds its tables from {revision}'s choices"
            + (
                "."
                if amendment is None
                else " and the amendment's wire change (read from the amendment it names)."
                if amendment.wire
                else " (the amendment only narrows them)."
            ),
            retired=() if amendment is None else tuple(sorted(amendment.retires())),
        )
    if profile is None:
        return None
    title = (
        named("profile", profile.name, args.profile, PROFILES)
        if args.profile is not None
        else "the reference agent"
    )
    if args.client is not None:
        title = f"{named('client', profile.client, args.client, CLIENTS)} driving {title}"
    files = [
        f"`{spec}`"
        for spec, shipped in ((args.profile, PROFILES), (args.client, CLIENTS))
        if spec is not None and spec not in shipped
    ]
    note = ""
    if files:
        s = "s" if len(files) > 1 else ""
        note = (
            f"`replay` reads {' and '.join(files)} again from that path: attach the file{s} "
            "to the review."
        )
    return Subject(
        f"{title} over {subject_of(revision, args.mutant or profile.mutant or None)}",
        (("client_profile", args.client),) if args.client is not None else (),
        note,
        meta_methods(profile),
    )


def _shortest(
    args: argparse.Namespace,
    tables: Tables,
    bound: Bound,
    rid: str,
    events: tuple[str, ...],
    est: Estimate | None,
) -> tuple[Trace | None, bool]:
    """The shortest counterexample of ``rid`` (through ``events``), and whether the search
    ended."""
    if events:  # a search of its own: the shortest through them (simulations.engines.through)
        line = _progress(args, f"search {rid} through {labels(events)} in {bound.name}")
        found = shortest_through(tables, bound, rid, events, not args.no_symmetry, line)
        if line is not None:
            line.done()
        return found.trace, found.complete
    line = _progress(args, f"search {rid} in {bound.name}", est)
    ex = explore(
        tables,
        bound,
        symmetry=not args.no_symmetry,
        progress=line,
        workers=args.workers,
        keep=bound.keep,  # a trace needs no graph
    )
    if line is not None:
        line.done()
    return (ex.trace(rid) if rid in ex.first else None), ex.complete


def _first_member(
    args: argparse.Namespace, pop: Population, bound: Bound, rid: str, events: tuple[str, ...]
) -> tuple[Member | None, Trace | None, bool]:
    """The first member of ``pop`` (``Population.members``: the reference build first, then
    in the order of the choices) that violates ``rid``, its shortest counterexample, and
    whether every search ended. Without events one ``judge`` of the whole population: one
    search per scope for every member, split only where members answer differently."""
    if events:
        for m in pop.members():
            trace, complete = _shortest(args, pop.tables(m), bound, rid, events, None)
            if trace is not None or not complete:
                return (m if trace else None), trace, complete
        return None, None, True
    from model.invariants import CHECKS
    from simulations.engines.population import judge

    line = None if args.quiet else _PopulationLine(bool(getattr(args, "progress", False)))
    j = judge(pop, bound, [CHECKS[rid]], args.workers, not args.no_symmetry, progress=line)
    if line is not None:
        line.done()
    o = next((o for o in j.outcomes if o.lost(rid)), None)
    return (None, None, j.complete) if o is None else (o.member, o.traces[rid], j.complete)


def _run_counterexample(args: argparse.Namespace) -> int:
    from simulations.outputs.forms import load_itf, write_counterexample

    profile, amendment = _counterexample_inputs(args)
    if amendment is not None:
        args.revision = amendment.base
    elif profile is not None:
        args.revision = profile.revision
    else:
        args.revision = revision_for(args.revision, args.mutant)
    pop = amendment.population() if amendment is not None else None
    if args.member is not None and pop is None:
        pop = population_of(args.revision)
        if pop.build is None:
            raise UsageError(
                f"argument --member: {args.revision} leaves no choice open (a member needs "
                f"--amend or a revision with a population: {', '.join(POPULATIONS)})"
            )
    what = f"amendment {amendment.name} of {args.revision}" if amendment else args.revision
    member = None
    if pop is not None and args.member is not None:
        member, filled = member_named(pop, args.member, what)
        if filled:  # said: the member checked is not the one the words alone name
            print(f"member: {describe(member)} ({', '.join(filled)}: the reference build's)")
    bound = advertised(
        bound_for(
            args.bound,
            args.revision,
            restarts_default(profile),
            None if profile is None else profile.admits(),
        ),
        profile,
    )
    rid = _id(args.id, args.revision)
    out = _out_dir(args.out)
    _announce(args, bound)
    if pop is not None:  # the member's; to pick one, the reference build's size
        tables = pop.tables(member if member is not None else pop.reference_member)
    elif profile is not None:
        tables = profile.tables()
    else:
        tables = tables_for(args.revision, args.mutant)
    est = _warn_size(bound, tables, not args.no_symmetry, single=_shows_progress(args))
    events = combined(bound, args.through)
    through = f" through {labels(events)}" if events else ""
    if pop is not None and member is None:  # an amendment: the first member that violates it
        member, trace, complete = _first_member(args, pop, bound, rid, events)
        if member is not None:
            tables = pop.tables(member)
            n = len(pop.members())
            cut = "" if complete else "; interrupted: a member before it may be unsearched"
            print(
                f"member: {describe(member)} (the first of {n} members of {what}, the reference "
                f"build first, that violates {rid}{cut})"
            )
        elif complete:
            print(
                f"acp-sysprompt: {rid} holds for every member of {what} within bound "
                f"{bound.name}: no counterexample{through}"
            )
            return 1
    else:
        trace, complete = _shortest(args, tables, bound, rid, events, est)
    if trace is None:
        if events:
            if not complete:
                print(
                    f"acp-sysprompt: {rid}: no counterexample{through} was found before the "
                    "interruption"
                )
                return INTERRUPTED
            print(f"{rid} has no counterexample{through} within bound {bound.name}")
            return 1
        state = "holds" if complete else "was not found before the interruption"
        print(f"acp-sysprompt: {rid} {state} within bound {bound.name}: no counterexample")
        return 1 if complete else INTERRUPTED
    subject = _subject(args, args.revision, profile, amendment, member)
    paths = write_counterexample(
        out,
        trace,
        tables,
        rid,
        args.revision,
        args.mutant,
        profile=args.profile,
        bound=bound,
        subject=subject,
        found_by=f"exhaustive BFS{', through ' + labels(events) if events else ''}",
    )
    print(
        f"{rid} violated: shortest counterexample {len(trace)} steps{through} (bound {bound.name})"
    )
    if subject is not None:
        print(f"  checked: {subject.title.replace('`', '')}")
    shown_ = len(load_itf(paths["trace.itf.json"])[0]) - len(trace)
    if shown_:
        print(f"  the mutant shows on the wire {shown_} step(s) later (the observing epilogue)")
    for p in paths.values():
        print(f"  {p}")
    return 0


def _itf_amendment(meta: dict[str, Any], revision: str) -> Amendment | None:
    """The amendment a trace's ``#meta.amendment`` names (a shipped name or its file), where it
    amends ``revision`` and changes the wire (its answers carry what the base's do not, and a
    status may retire a rule), else None: narrowing alone rebuilds from ``revision``'s
    choices. An amendment that cannot be read is one line, exit 2."""
    named = meta.get("amendment")
    if not isinstance(named, str):
        return None
    try:
        amendment = load_amendment(named)
    except AmendmentError as e:
        raise UsageError(f"argument file: #meta.amendment: {e}") from None
    return amendment if amendment.base == revision and amendment.wire else None


def _itf_member(value: object, revision: str, pop: Population | None = None) -> Member | None:
    """The population member a trace's ``#meta.member`` names, where ``revision`` (the one
    replayed against) leaves choices open; None where it names none, or the revision is one
    build. A member that is none of the revision's is one line, exit 2."""
    pop = pop or population_of(revision)
    if value is None or (pop.build is None and not pop.replies):
        return None
    if isinstance(value, dict):
        for m in pop.members():
            if dict(m) == value:
                return m
    raise UsageError(
        f"argument file: #meta.member: {shown(value, 120)} is no member of {revision} "
        f"(choices: {', '.join(k for k, _ in pop.allowed)})"
    )


def _run_replay(args: argparse.Namespace) -> int:
    from simulations.outputs.forms import load_itf

    try:
        trace, meta = load_itf(args.file)
    except OSError as e:
        raise UsageError(f"argument file: cannot read {str(args.file)!r}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"argument file: not an ITF trace of this tool: {e}") from None
    mutant = args.mutant if args.mutant is not None else meta.get("mutant")
    if mutant in ("", "none"):
        mutant = None
    revision = revision_for(args.revision or meta.get("revision"), mutant)
    tables = tables_for(revision, mutant)
    profile_name = args.profile or meta.get("agent_profile")
    client_name = meta.get("client_profile")  # a client profile paired with the agent
    methods: tuple[str, ...] = ()  # where the profile's client puts the prompt in _meta
    if profile_name or client_name:
        try:
            agent = load_profile(profile_name) if profile_name else None
            rev = revision if agent is None else None
            profile = pair(agent, load_client(client_name), rev) if client_name else agent
            assert profile is not None  # a profile's name, a client's, or both
            if args.profile is None and mutant is not None and profile.mutant != mutant:
                profile = profile.with_mutant(mutant)  # the trace's profile over its mutant
            tables = profile.tables()
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
        if args.revision is None:
            revision = profile.revision
        methods = meta_methods(profile)
    member = None  # a member of a population: its tables
    keep = REVISIONS[revision].states
    if mutant is None and not (profile_name or client_name):
        amendment = _itf_amendment(meta, revision)
        pop = population_of(revision) if amendment is None else amendment.population()
        member = _itf_member(meta.get("member"), revision, pop)
        if member is not None:
            tables = pop.tables(member)
            if amendment is not None:
                keep = amendment.revision().states  # less the rules it retires
    rid = meta.get("requirement")
    steps = replay(trace, tables, keep)
    fields = wire_fields(revision_wire(revision), methods)
    for i, req in enumerate(trace.requests, 1):  # shown as the revision's wire carries it
        try:
            fields(req)
        except ValueError as e:
            raise UsageError(
                f"argument file: step {i} is no message of {revision}'s wire: {shown(str(e))}"
            ) from None
    print(render_steps(trace, tables, keep, fields))
    hit = next((i for i, st in enumerate(steps, 1) if rid in st.violated), None)
    what = f"mutant {mutant} of {revision}" if mutant else revision
    if member is not None:
        what = f"member {describe(member)} of {revision}"
    if hit is None:
        print(f"not reproduced: {rid} is not violated when replayed against {what}")
        return 0
    print(f"reproduced: {rid} violated at step {hit} of {len(steps)} against {what}")
    return 1


CONFORM_EXITS = (
    "exit codes: 0 conformant; 1 not conformant (the verdict); 2 bad usage, or --out or "
    "--report-json could not be written (checked before the run; a failure while writing, "
    "after the verdict is printed), or standard output could not (the files still written); "
    "3 internal error (a fault of acp-sysprompt, never the "
    "agent's: the verdict of the tests that ran is printed, the traceback after it on "
    "stderr); 130 Ctrl-C or SIGTERM (the report of the tests that ran is still printed and "
    "written)"
)


def _conform_parser(sub: Any) -> None:
    c = sub.add_parser(
        "conform",
        help="check a running agent on stdio against the model (-- AGENT_CMD ...)",
        description="Check a running agent on stdio against the model. " + CONFORM_EXITS,
    )
    c.add_argument("--revision", default="v1-stable", help="judge by this revision")
    c.add_argument("--report-json", type=Path, default=None, help="write the JSON report here")
    c.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the run here: its summary, JSON report, each test's wire and each "
        "failure's forms (a README.md says which is which)",
    )
    c.add_argument("--timeout", type=float, default=10.0, help="seconds per answer (10; 0.05–3600)")
    c.add_argument(
        "--test-timeout", type=float, default=60.0, help="seconds per test (60; 0.05–3600)"
    )
    c.add_argument("--walks", type=int, default=0, help="random walks after the row tests")
    c.add_argument("--steps", type=_positive, default=20, help="requests per walk (20)")
    c.add_argument("--seed", type=_seed, default=0, help="the walks' seed (0)")
    c.add_argument(
        "--only", default=None, help="comma-separated ids: run only the tests reaching them"
    )
    c.add_argument("--big", action="store_true", help="also send the over-limit text 'big'")
    c.add_argument(
        "--no-coverage",
        action="store_true",
        help="the rows plan alone, without the tests that cover every situation of the live "
        "bound (the report says coverage was not measured)",
    )
    c.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds: no test starts past them (the plan's order is its priority: rows, "
        "mutants, reopen matrix, then coverage); the report names what was left out",
    )
    c.add_argument("--jobs", type=_positive, default=1, help="tests run side by side (1)")
    c.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="run the plan N times (1): an id that fails in some runs and not in others is "
        "reported unstable ('FAIL in 2 of 3 runs'); a FAIL in any run counts as today",
    )
    c.add_argument(
        "--repeat-rows",
        action="store_true",
        help="with --repeat N: the coverage tests run once, the rest of the plan (rows, "
        "mutants, the reopen matrix) N times; an id is judged unstable on those",
    )
    c.add_argument(
        "--model-endpoint",
        action="store_true",
        help="start a recording model API on 127.0.0.1 and read each turn's system slot from "
        "the agent's model calls; {endpoint} in AGENT_CMD is its base URL",
    )
    c.add_argument(
        "--bound",
        metavar="NAME|FILE",
        default="small",
        help="the bound the live plan's shortest paths come from: a named bound or a bound "
        "file (small)",
    )
    c.add_argument(
        "--recipe",
        metavar="NAME|FILE",
        help="run a real agent by its recipe (a shipped name or a .toml file: command, "
        "environment, config files) through the model endpoint, instead of -- AGENT_CMD",
    )
    c.add_argument(
        "--expect",
        metavar="FILE",
        type=Path,
        help="with --recipe: compare what the run found with the pins of FILE for this recipe "
        "and version (e.g. real-agents/expectations.toml): exit 0 where they match, 1 with "
        "each difference printed",
    )
    c.add_argument(
        "--prefix",
        type=Path,
        default=Path("real-agents"),
        help="where `make real-agents` installed the recipes' packages (real-agents)",
    )
    c.add_argument(
        "--draft-agent",
        choices=("takes-field", "predates-field"),
        default="takes-field",
        help="rfd-draft and pr-1494 show no capability: does the agent take systemPrompt?",
    )


PROGRESS = "acp-sysprompt: progress: "  # the start of conform's progress lines on stderr


def _run_conform(args: argparse.Namespace) -> int:
    """``conform``: outputs checked before the run, the verdict printed before anything that
    can fail, Ctrl-C or SIGTERM at any point of it 130 (``interrupts``: a flag, never an
    exception mid-way), a fault of this tool 3 (after the verdict, with its traceback)."""
    from simulations.live.conform.options import interrupts
    from simulations.live.oracle.results import INTERNAL_ERROR

    try:
        with interrupts() as interrupt:
            code = _conform_and_report(args, interrupt)
    except KeyboardInterrupt:  # before the handler was set, or after it was taken down
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (UsageError, BrokenPipeError, _OutputFailed):
        raise
    except Exception:
        return _internal_error(INTERNAL_ERROR)
    return code


def _conform_and_report(args: argparse.Namespace, interrupt: Interrupt) -> int:
    from model.types import PromptCap
    from simulations.live.conform.conform import conform
    from simulations.live.conform.report import (
        check_output_dir,
        check_output_file,
        counterexample_paths,
        render,
        write_json,
        write_out,
    )
    from simulations.live.oracle.results import INTERNAL_ERROR, ConformError, clip_middle

    if args.walks < 0:
        raise UsageError(f"argument --walks: expected a number >= 0, got {args.walks}")
    recipe = None
    if args.recipe is not None:
        from simulations.live.recipes.recipes import RecipeError, load_recipe

        if args.agent:
            raise UsageError("argument --recipe: give the recipe or -- AGENT_CMD, not both")
        try:
            recipe = load_recipe(args.recipe)
        except RecipeError as e:
            raise UsageError(str(e)) from None
        args.agent = recipe.argv(args.prefix.resolve())
    expected = None
    if args.expect is not None:
        from simulations.live.conform.expectations import ExpectationsError, load_expectations

        if recipe is None:
            raise UsageError(
                "argument --expect: needs --recipe (the pins are per recipe and version)"
            )
        try:
            expected = load_expectations(args.expect)
        except ExpectationsError as e:
            raise UsageError(str(e)) from None
    skipped = None if recipe is None else recipe.skipped()
    if recipe is not None and skipped is not None:  # its runtime is missing: not run, not failed
        print(f"SKIPPED: recipe {recipe.name}: {skipped}", flush=True)
        return 0
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    try:
        if args.report_json is not None:
            check_output_file(args.report_json, "--report-json")
        if args.out is not None:
            check_output_dir(args.out, "--out")
        report = conform(
            args.agent,
            revision=revision_for(args.revision),
            timeout=args.timeout,
            test_timeout=args.test_timeout,
            big=args.big,
            only=only,
            walks=args.walks,
            steps=args.steps,
            seed=args.seed,
            unseen=PromptCap.APPEND if args.draft_agent == "takes-field" else PromptCap.NONE,
            jobs=args.jobs,
            interrupt=interrupt,
            model_endpoint=args.model_endpoint or recipe is not None,
            recipe=recipe,
            bound=args.bound,
            coverage=not args.no_coverage,
            budget=args.budget,
            progress=lambda line: print(f"{PROGRESS}{line}", file=sys.stderr, flush=True),
            wire_dir=None if args.out is None else args.out / "wire",
            repeat=args.repeat,
            repeat_rows=args.repeat_rows,
        )
    except ConformError as e:
        raise UsageError(str(e)) from None
    if args.out is not None:
        counterexample_paths(report, args.out)
    unwritten = None  # a standard output that refuses the verdict: the files still written
    try:
        print(render(report), flush=True)  # the verdict first: nothing after it can lose it
    except _OutputFailed as e:
        unwritten = e
    code = report.exit_code()
    faults = [] if report.internal_error is None else [report.internal_error]
    failed = []
    for name, path, write in (
        ("--out", args.out, partial(write_out, report)),
        ("--report-json", args.report_json, partial(write_json, report)),
    ):
        if path is None:
            continue
        try:  # each output on its own: one that fails does not keep the other from its file
            write(path)
        except OSError as e:
            where = e.filename or path
            failed.append(f"argument {name}: cannot write {str(where)!r}: {e.strerror}")
        except Exception:
            faults.append(traceback.format_exc())
    for text in faults:
        print(clip_middle(text, 20_000), file=sys.stderr)
    for line in failed:
        print(f"acp-sysprompt: error: {line}", file=sys.stderr)
    if faults:
        print(
            "acp-sysprompt: internal error (a fault of acp-sysprompt, not of the agent; "
            f"the traceback is above): exit {INTERNAL_ERROR}",
            file=sys.stderr,
        )
        return INTERNAL_ERROR
    if unwritten is not None:
        raise unwritten
    if failed:
        return 2
    if interrupt.stopping:
        return INTERRUPTED
    if expected is not None and recipe is not None and code in (0, 1):
        return _compare_pins(expected, recipe, args.prefix, report)
    return code


def _compare_pins(expected: Expectations, recipe: Recipe, prefix: Path, report: Report) -> int:
    """``conform --expect``: what the run found against the pins of the recipe's installed
    version (the recipe's own where none is installed); 0 where they match, 1 with each
    difference."""
    from simulations.live.conform.expectations import differences, seen_in, unseen

    version = recipe.installed(prefix.resolve()) or recipe.version
    seen = seen_in(report)
    diffs = differences(expected, recipe.name, version, seen)
    for line in unseen(expected, recipe.name, version, seen):
        print(f"expectations: note: {line}")
    if not diffs:
        print(f"expectations: {recipe.name} {version} as pinned in {expected.where}")
        return 0
    print(f"expectations: {len(diffs)} difference(s) from {expected.where}:")
    for line in diffs:
        print(f"  {line}")
    return 1


def _internal_error(code: int) -> int:
    """A fault of this tool outside the run: its traceback, then one line naming it."""
    traceback.print_exc()
    print(
        f"acp-sysprompt: internal error (a fault of acp-sysprompt; the traceback is above): "
        f"exit {code}",
        file=sys.stderr,
    )
    return code


def _run_live_replay(args: argparse.Namespace) -> int:
    """``replay TRACE -- AGENT_CMD``: 0 not reproduced, 1 reproduced, 2 bad usage, 3 internal
    error, 130 Ctrl-C or SIGTERM."""
    from simulations.live.conform.conform import replay_live
    from simulations.live.conform.options import interrupts
    from simulations.live.oracle.results import INTERNAL_ERROR, ConformError

    try:
        with interrupts() as interrupt:
            return replay_live(args.file, args.agent, timeout=args.timeout, interrupt=interrupt)
    except ConformError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt:  # before the handler was set, or after it was taken down
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (BrokenPipeError, _OutputFailed):
        raise
    except Exception:
        return _internal_error(INTERNAL_ERROR)


def _run_report(args: argparse.Namespace) -> int:
    from simulations.outputs.report import build_report

    if args.bound not in BOUNDS:
        raise UsageError(
            f"argument --bound: unknown bound {args.bound!r} (choose from {', '.join(BOUNDS)})"
        )
    if args.jobs < 1:
        raise UsageError(f"argument --jobs: must be at least 1, got {args.jobs}")
    out = _out_dir(args.out)
    _warn_size(bound_for(args.bound, "rfd-final"), tables_for("rfd-final", None), True)

    def say(text: str) -> None:
        if not args.quiet:
            print(f"  {text}", file=sys.stderr, flush=True)

    path = build_report(
        out,
        args.bound,
        mutants=() if args.no_kill_matrix else None,
        progress=say,
        jobs=args.jobs,
    )
    print(_noted(f"report written: {path}"))
    return 0


OUTPUT_FAILED = 2  # standard output could not be written (a full disk, /dev/full, EIO)


class _OutputFailed(Exception):
    """Standard output refused a write (not a closed pipe): ``main`` says so in one line."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))


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
            raise _OutputFailed(e) from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise _OutputFailed(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _drop_stdout() -> None:
    """Point the stdout file descriptor at /dev/null: the interpreter's last flush of what
    is still buffered then succeeds, and prints no "Exception ignored" at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


_CACHE = ExitStack()  # the cache of the command running (``_use_cache``)
_CLUSTER = ExitStack()  # the cluster the running command attached (``--cluster``)


def _use_cache(args: argparse.Namespace) -> None:
    """A command that explores reads and writes the answers remembered across runs (not when
    a share is set: the test suite's and ``make demo``'s one-run folder goes first)."""
    if not hasattr(args, "no_cache") or share.directory() is not None:
        return
    folder = user_cache.chosen(args.cache, args.no_cache)
    if folder is not None:
        _CACHE.enter_context(user_cache.using(user_cache.opened(folder)))


def _noted(text: str) -> str:
    """``text`` with its first line (a header) saying how many searches the cache answered."""
    on = user_cache.active()
    if on is None:
        return text
    answered, asked = on.counts.now()
    if not asked:
        return text
    first, sep, rest = text.partition("\n")
    return f"{first}  ({answered} of {asked} searches answered from the cache){sep}{rest}"


def _run_cache(args: argparse.Namespace) -> int:
    folder = user_cache.chosen(args.cache)
    if folder is None:
        print(f"cache: off ({user_cache.CACHE}={os.environ.get(user_cache.CACHE)})")
        return 0
    if args.action == "clear":
        removed = user_cache.clear(folder)
        print(f"cache {folder}: removed {removed} entr{'y' if removed == 1 else 'ies'}")
        return 0
    data = user_cache.info(folder)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"cache:   {data['path']}{'' if data['exists'] else ' (not created yet)'}")
    print(f"entries: {data['entries']:,}")
    print(f"size:    {user_cache.size(data['bytes'])} ({data['bytes']:,} bytes)")
    print(f"bound:   {user_cache.size(data['max_bytes'])} ({user_cache.CACHE_MAX})")
    return 0


_STARTED: list[float] = []  # when the running command began (``main``): its headers' wall clock


def _wall() -> float | None:
    """The running command's seconds so far (None outside ``main``)."""
    return time.monotonic() - _STARTED[-1] if _STARTED else None


def main(argv: Sequence[str] | None = None) -> int:
    _STARTED.append(time.monotonic())
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe or a full disk shows up here, not at interpreter exit
        return code
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        _drop_stdout()
        return 0
    except _OutputFailed as e:
        _drop_stdout()
        print(f"acp-sysprompt: error: cannot write to standard output: {e}", file=sys.stderr)
        return OUTPUT_FAILED
    except KeyboardInterrupt:  # a command with no interrupt of its own (validate, list): one line
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    finally:
        _CACHE.close()  # the cache ``_use_cache`` turned on ends with the command
        _CLUSTER.close()  # the cluster ``--cluster`` attached (a local one is stopped)
        sys.stdout = stdout
        _STARTED.pop()


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
            return _run_cache(args)
        _use_cache(args)
        if args.command == "list":
            data = listing()
            if args.json:
                print(json.dumps(data, indent=2))
            else:
                print("revisions: " + ", ".join(r["name"] for r in data["revisions"]))
                print("engines:   " + ", ".join(e["name"] for e in data["engines"]))
                print("bounds:    " + ", ".join(b["name"] for b in data["bounds"]))
                print("profiles:  " + ", ".join(p["name"] for p in data["profiles"]))
                print("clients:   " + ", ".join(c["name"] for c in data["clients"]))
                print("amendments: " + ", ".join(a["name"] for a in data["amendments"]))
                print(
                    "proposals: "
                    + ", ".join(f"{a['name']} (of {a['base']})" for a in data["proposals"])
                )
                print("mutants (name → id it must violate):")
                for m in data["mutants"]:
                    print(f"  {m['name']:42s} {m['violates']:4s} {m['summary']}")
            return 0
        if args.command == "bound":
            try:
                print(bound_toml(load_bound(args.name)), end="")
            except BoundError as e:
                raise UsageError(f"argument name: {e}") from None
            return 0
        if args.command == "conform-client":
            try:
                return client_conform.run(args)
            except client_conform.UsageError as e:
                raise UsageError(str(e)) from None
        if args.command == "validate":
            try:
                return validate.run(args)
            except validate.UsageError as e:
                raise UsageError(str(e)) from None
        if args.command == "explore":
            return _run_explore(args)
        if args.command == "counterexample":
            return _run_counterexample(args)
        if args.command == "replay" and args.agent:
            return _run_live_replay(args)
        if args.command == "replay":
            return _run_replay(args)
        if args.command == "conform":
            return _run_conform(args)
        if args.command == "report":
            try:
                return _run_report(args)
            except KeyboardInterrupt:
                print("acp-sysprompt: interrupted: report.md not written", file=sys.stderr)
                return 130
        if args.cluster is not None:  # before anything else: the flag's own errors
            cluster.parse(args.cluster)
            if not cluster.available():
                raise UsageError(
                    f"argument --cluster: the cluster engine is not installed: {cluster.INSTALL}"
                )
        if args.compare is not None:
            return _run_compare(args)
        if args.client is not None and args.amend is not None:
            _agent_profile(argparse.Namespace(**{**vars(args), "client": None}))  # its errors first
            raise UsageError(
                "argument --client: a client profile pairs with an agent "
                "profile, a revision or a mutant, not with --amend"
            )
        profile = _agent_profile(args)
        if profile is not None:  # a real client with a real agent: said, not refused
            for knob, other in profile.idle_client_knobs().items():
                print(
                    f"acp-sysprompt: warning: {knob} = {json.dumps(getattr(profile, knob))} "
                    f"changes nothing with {other} (the agent's tables are the same without it)",
                    file=sys.stderr,
                )
        amendment = None
        if args.amend is not None:
            try:
                amendment = load_amendment(args.amend)
            except AmendmentError as e:
                raise UsageError(f"argument --amend: {e}") from None
        restarts = args.restarts or restarts_default(profile)
        if args.through and (
            args.engine != "bfs"
            or amendment is not None
            or _population_run(args, profile, amendment)
        ):
            raise UsageError(
                "argument --through: needs --engine bfs and one exploration (not --amend; a "
                "revision that leaves choices open: add --reference)"
            )
        if args.out is not None:  # before any exploration: one line, exit 2
            _out_dir(args.out)
        if args.cluster is not None:
            if args.engine != "bfs":
                raise UsageError("argument --cluster: spreads the bfs engine's searches only")
            _CLUSTER.enter_context(cluster.attached(args.cluster, None if args.quiet else _say))
        if _population_run(args, profile, amendment):
            return _run_population(args, amendment, restarts)
        line = None
        if args.engine == "bfs":
            rev = amendment.base if amendment else profile.revision if profile else args.revision
            bound = advertised(
                bound_for(
                    args.bound,
                    revision_for(rev, args.mutant),
                    restarts,
                    None if profile is None else profile.admits(),
                ),
                profile,
            )
            _announce(args, bound)
            if bound.require and amendment is not None:  # said, never ignored
                raise UsageError(
                    f"bound {bound.name}: require ({labels(bound.require)}) filters one "
                    "exploration's counterexamples, not an amendment's diff"
                )
            if amendment is not None:
                tables = amendment.tables()
            elif profile is not None:
                tables = profile.tables()
            else:
                tables = tables_for(revision_for(args.revision, args.mutant), args.mutant)
            est = _warn_size(bound, tables, not args.no_symmetry, single=_shows_progress(args))
            line = _progress(args, "check", est)
        run_check = partial(
            check,
            engine=args.engine,
            seed=args.seed,
            examples=args.examples,
            steps=args.steps,
            domain=DEFAULT_DOMAIN.with_restarts(restarts),
            bound=args.bound,
            symmetry=not args.no_symmetry,
            progress=line,
            workers=args.workers,
        )
        # the amended run first: it rejects conflicting arguments before any exploration
        result = run_check(args.revision, args.mutant, profile=profile, amendment=amendment)
        base = None if amendment is None else run_check(amendment.base)
        if line is not None:
            line.done()
        if profile is not None:  # which departure breaks which id: a re-run per departure
            with_causes(result, lambda q: run_check(profile=q, progress=None))
            if result.fired is not None:  # a knob no step reached: said, with why
                _idle_warnings(profile, result.fired, args.bound, run_check)
        events = combined(bound, args.through) if args.engine == "bfs" and not amendment else ()
        none: list[str] | None = None  # the ids with no counterexample through the events
        if events and result.complete:  # each counterexample: the shortest through the events
            line = _progress(args, f"search through {labels(events)}")
            result.counterexamples, none, result.complete = through_all(
                result.counterexamples, tables, bound, events, not args.no_symmetry, line
            )
            if line is not None:
                line.done()
    except UsageError as e:
        print(f"acp-sysprompt: error: {e}", file=sys.stderr)
        return 2
    except _Interrupted:
        print("acp-sysprompt: interrupted before the run started", file=sys.stderr)
        return INTERRUPTED
    if amendment is not None and base is not None:
        diff = verdict_diff(base, result)
        if args.json:
            data = to_json(result)
            data["diff"] = diff_json(diff, base, result)
            data["keeps_claims"] = keeps_promise(amendment, diff)
            print(json.dumps(data, indent=2))
        else:
            print(_noted(render(result, _wall())) + "\n" + render_diff(base, result, diff))
        if args.out is not None and not _write_check_out(
            args, result, bound if args.engine == "bfs" else None
        ):
            return OUTPUT_FAILED
        if not (result.complete and base.complete):
            return INTERRUPTED
        return 0 if keeps_promise(amendment, diff) else 1
    doc = to_json(result) if args.json else None
    if doc is not None and none is not None:
        doc["through"] = {"events": list(events), "none": none}
    print(json.dumps(doc, indent=2) if doc is not None else _noted(render(result, _wall())))
    if doc is None and none is not None:  # the counterexamples shown are the ones asked for
        rest = "" if result.complete else "; interrupted: the ids not shown were not searched"
        print(
            f"counterexamples: the shortest through {labels(events)}; "
            f"none through them within bound {bound.name}: {', '.join(none) or '-'}{rest}"
        )
    if args.out is not None and not _write_check_out(
        args, result, bound if args.engine == "bfs" else None, events
    ):
        return OUTPUT_FAILED
    if not result.complete:
        return INTERRUPTED
    return result.exit_code(args.strict)


def _run_compare(args: argparse.Namespace) -> int:
    """``check --compare A B``: both judged on one bound (``simulations.compare``), put side
    by side (``simulations.outputs.compare``); 0 once both are judged, 130 if interrupted."""
    from simulations.compare import compare_side
    from simulations.outputs.compare import comparison_json, render_comparison

    alone = [f"--{k}" for k in ("revision", "mutant", "profile", "client", "amend", "out")]
    given = [a for a in alone if getattr(args, a[2:]) is not None]
    given += [a for a, on in (("--reference", args.reference), ("--through", args.through)) if on]
    if given or args.engine != "bfs":
        raise UsageError(
            f"argument --compare: compares its two subjects alone on --bound (drop "
            f"{', '.join(given) or '--engine'})"
        )
    line = None if args.quiet else _PopulationLine(bool(args.progress))
    run = partial(
        compare_side,
        bound=args.bound,
        restarts=args.restarts,
        workers=args.workers,
        symmetry=not args.no_symmetry,
        progress=line,
    )
    a, b = run(args.compare[0]), run(args.compare[1])
    if line is not None:
        line.done()
    bound = bound_for(args.bound, "v1-stable").name
    if args.json:
        print(json.dumps(comparison_json(a, b, bound), indent=2))
    else:
        print(_noted(render_comparison(a, b, bound)))
    return 0 if a.complete and b.complete else INTERRUPTED


def _idle_warnings(
    profile: Profile, fired: frozenset[tuple[str, int]], bound: str, run: Any
) -> None:
    """One warning line per knob whose rows no step of the check used (``idle_knobs``)."""
    from simulations.outputs.knobs import idle_knobs

    used = idle_knobs(profile, fired, bound, lambda q: run(profile=q, progress=None).fired)
    for line in used.values():
        print(f"acp-sysprompt: warning: {line}", file=sys.stderr)


def _written(args: argparse.Namespace, folders: list[Path], what: str) -> None:
    """The folders ``check --out`` wrote, after the verdicts (on stderr under ``--json``)."""
    to = sys.stderr if args.json else sys.stdout
    print(f"wrote {len(folders)} counterexample folder(s) in {args.out} ({what}):", file=to)
    for d in folders:
        print(f"  {d / 'review.md'}", file=to)


def _write_check_out(
    args: argparse.Namespace,
    result: CheckResult,
    bound: Bound | None,
    events: tuple[str, ...] = (),
) -> bool:
    """``check --out`` of one build: each violated id's counterexample in its five forms,
    ``DIR/<id>/`` (False, and one line, where a file cannot be written)."""
    from simulations.outputs.forms import folder_name, write_counterexample

    subject = _subject(args, result.revision, result.profile, result.amendment, None)
    bfs = result.engine == "bfs"
    folders = []
    try:
        for rid in sorted(result.counterexamples, key=id_order):
            if result.verdicts.get(rid) != VIOLATED:
                continue
            if bfs:
                how = f"exhaustive BFS{', through ' + labels(events) if events else ''}"
            else:
                how = f"Hypothesis ({'shrunk' if result.shrunk.get(rid) else 'not shrunk'})"
            d = args.out / folder_name(rid)
            write_counterexample(
                d,
                result.counterexamples[rid],
                result.tables,
                rid,
                result.revision,
                result.mutant,
                profile=args.profile,
                bound=bound,
                subject=subject,
                found_by=how,
                shortest=bfs,
            )
            folders.append(d)
    except OSError as e:
        return _unwritable(args, e)
    _written(args, folders, "one per violated id")
    return True


def _write_population_out(
    args: argparse.Namespace, pc: PopulationCheck, amendment: Amendment | None
) -> bool:
    """``check --out`` of a population (an amendment's: the amended one, its claims among
    them): one folder per heading ``<id> lost where <choices>``, ``DIR/<id>-<choices>/``,
    with the counterexample of the member that heading prints."""
    from simulations.outputs.forms import folder_name, write_counterexample
    from simulations.outputs.population import P_IDS, lost_where_subject

    j, pop = pc.judged, pc.population
    folders: list[Path] = []
    try:
        for rid in P_IDS:
            for p, o in j.losing(rid):
                where = describe(p) if p else "every member"
                name = first = folder_name(rid, where.replace(", ", ","))
                while name in {d.name for d in folders}:  # two headings, one folder name
                    name = f"{first}-{len(folders)}"
                subject = _subject(args, pc.revision, None, amendment, o.member)
                assert subject is not None
                amended = None if amendment is None else (amendment, args.amend)
                d = args.out / name
                write_counterexample(
                    d,
                    o.traces[rid],
                    pop.tables(o.member),
                    rid,
                    pc.revision,
                    None,
                    subject=lost_where_subject(
                        subject, pc, rid, p, o.member, amended, str(args.bound)
                    ),
                )
                folders.append(d)
    except OSError as e:
        return _unwritable(args, e)
    _written(args, folders, "one per heading 'lost where'")
    return True


def _population_run(args: argparse.Namespace, profile: object, amendment: object) -> bool:
    """A revision that leaves choices open, checked as a revision: over its population."""
    if args.reference or args.engine != "bfs" or profile is not None or args.mutant:
        return False
    if amendment is not None:
        return True
    return population_of(revision_for(args.revision, None)).build is not None


class _PopulationLine:
    """Progress of a population check on stderr: searches done, left, ETA."""

    def __init__(self, forced: bool = False) -> None:
        self.out = _Emitter(forced)

    def __call__(self, searched: int, total: int, seconds: float) -> None:
        left = total - searched
        rate = seconds / searched if searched else 0.0
        eta = f"ETA ~{left * rate:,.0f}s" if searched else "ETA unknown"
        self.out.emit(
            f"population: {searched} of {total} searches done  "
            f"{seconds:.1f}s  {eta}  (Ctrl-C stops and keeps what was found)"
        )

    def done(self) -> None:
        self.out.done()


def _unwritable(args: argparse.Namespace, e: OSError) -> bool:
    """``check --out`` could not write: one line on stderr; False (nothing more is written)."""
    where = e.filename or args.out
    print(
        f"acp-sysprompt: error: argument --out: cannot write {str(where)!r}: {e.strerror}",
        file=sys.stderr,
    )
    return False


def _run_population(args: argparse.Namespace, amendment: Amendment | None, restarts: str) -> int:
    if (
        amendment is not None
        and args.revision is not None
        and revision_for(args.revision) != amendment.base
    ):
        raise UsageError(
            f"argument --amend: {amendment.name} amends {amendment.base}, not "
            f"{revision_for(args.revision)} (drop --revision)"
        )
    revision = amendment.base if amendment is not None else revision_for(args.revision, None)
    bound = bound_for(args.bound, revision, restarts)
    if bound.require:  # said, never ignored
        raise UsageError(
            f"bound {bound.name}: require ({labels(bound.require)}) filters one exploration's "
            "counterexamples, not a population's (add --reference)"
        )
    _announce(args, bound)
    # the reference build's size; each member's searches are of the same order
    _warn_size(bound, tables_for(revision, None), not args.no_symmetry)
    line = None
    if not args.quiet:  # on a terminal, or every few seconds where stderr is piped
        line = _PopulationLine(bool(args.progress))
    run = partial(
        check_population,
        revision,
        bound,
        restarts,
        workers=args.workers,
        symmetry=not args.no_symmetry,
        progress=line,
    )
    clock = Clock(_STARTED[-1] if _STARTED else None)
    if amendment is None:
        with clock.stage("population"):
            result = run()
        if line is not None:
            line.done()
        print(
            json.dumps({**population_json(result), "clock": clock.json()}, indent=2)
            if args.json
            else _noted(render_population(result, clock=clock))
        )
        if args.out is not None and not _write_population_out(args, result, None):
            return OUTPUT_FAILED
        return result.exit_code(args.strict) if result.judged.complete else INTERRUPTED
    rules = rule_checks(amendment)
    # split where the amendment scopes a choice to a situation, so both sides count the same
    # agents (model.amend.Amendment.base_population; the base population itself otherwise)
    base_pop = amendment.base_population()
    split = base_pop.splits()
    with clock.stage("base population"):
        base = run(
            population=base_pop,
            title=f"{revision} with {split}" if split else revision,
            extra=rules,
        )
    with clock.stage("amended population"):
        amended = run(
            population=amendment.population(),
            title=f"amendment {amendment.name} of {revision}",
            extra=rules,
        )
    if line is not None:
        line.done()
    report = AmendmentReport(amendment, base, amended)
    if args.json:
        with clock.stage("diff"):
            doc = report.json()
        print(json.dumps({**doc, "clock": clock.json()}, indent=2))
    else:
        with clock.stage("diff"):
            diff = report.render()
        print(_noted(render_population(amended, clock=clock)) + "\n" + diff)
    if args.out is not None and not _write_population_out(args, amended, amendment):
        return OUTPUT_FAILED
    if not (base.judged.complete and amended.judged.complete):
        return INTERRUPTED
    return 0 if report.kept else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
