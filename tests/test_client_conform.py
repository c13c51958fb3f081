"""``conform-client``: the tool plays the agent toward a client and judges the client's half of
the rules; the repository's scripted client conforms, each faulty build fails its id (the
client kill matrix); the report is read back by ``validate``; bad recipes are one line."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from simulations import cli
from simulations.live.conform_client import conform as cc
from simulations.live.conform_client import plan as cp
from simulations.live.conform_client import recipe as client_recipe
from simulations.live.conform_client import run as client_run
from simulations.live.conform_client.scripted_client import BUILDS
from simulations.live.validate.model import OUTSIDE
from simulations.live.validate.validate import validate_files
from simulations.usage import INCOMPLETE_EXIT


def _override_taken_away(test: cp.ClientTest) -> bool:
    """A scenario whose restart takes away the override the session was created with: any
    re-open there breaks T6 (its check excuses a re-open only where T2 forbids the prompt, not
    where T3 forbids its mode), whatever the client does."""
    after = test.after
    return (
        test.mode == "override"
        and "systemPrompt=override" in test.caps
        and after is not None
        and "systemPrompt=override" not in after
    )


def _conforms(report: cc.ClientReport) -> None:
    assert report.verdict == "CONFORMANT", report.render()
    # every rule reached and kept: none passes by never being reached; T6 (a SHOULD) fails
    # only where no client can keep it (_override_taken_away)
    statuses = {rid: report.status(rid) for rid in client_run.IDS if rid != "T6"}
    assert statuses == dict.fromkeys(statuses, client_run.PASS)
    t6 = [(r.test, o) for r in report.results for o in r.outcomes if o.rid == "T6"]
    assert any(o.status == client_run.PASS for _, o in t6)
    assert all(_override_taken_away(t) for t, o in t6 if o.status == client_run.FAIL)


FIRST = 8  # the scenarios of the plan's priority make test runs the conforming client on


def test_the_conforming_scripted_client_conforms_on_the_plan_s_first_scenarios(
    tmp_root: Path,
) -> None:
    plan = cc.plan_for(cc.scripted_recipe())
    first = replace(plan, tests=plan.tests[:FIRST])
    report = cc.conform_client(cc.scripted_recipe(), Path("."), plan=first)
    _conforms(report)
    assert list(tmp_root.iterdir()) == []  # each test's folder removed


def test_the_conforming_scripted_client_conforms(tmp_root: Path) -> None:
    report = cc.conform_client(cc.scripted_recipe(), Path("."))
    _conforms(report)
    assert [r.agent_findings for r in report.results] == [[] for _ in report.results]
    assert report.not_run == [] and report.unplanned == []
    assert report.coverage().startswith(f"covered {len(report.results)} of {len(report.results)} ")
    assert list(tmp_root.iterdir()) == []  # each test's folder removed
    assert _running("simulations.live.conform_client.scripted_client", str(tmp_root)) == []


# each faulty build, the id it must fail: the client kill matrix
FAULTY = sorted((b, rid) for b, (rid, _) in BUILDS.items() if rid)


@pytest.mark.parametrize(("build", "rid"), FAULTY, ids=[b for b, _ in FAULTY])
def test_each_faulty_client_build_fails_its_id(build: str, rid: str, tmp_root: Path) -> None:
    """The plan's scenarios aiming at the id, in the plan's order, up to the first that
    convicts the build (as a run stopped at its first failure): one is found, and it fails
    that id alone."""
    plan = cc.plan_for(cc.scripted_recipe())
    aimed = [t for t in plan.tests if rid in t.targets] or list(plan.tests[:1])
    report = None
    for test in aimed:
        one = replace(plan, tests=(test,))
        report = cc.conform_client(cc.scripted_recipe(build), Path("."), only=[rid], plan=one)
        if report.status(rid) == client_run.FAIL:
            break
    assert report is not None and report.status(rid) == client_run.FAIL, report
    failing = {o.rid for r in report.results for o in r.outcomes if o.status == client_run.FAIL}
    assert failing == {rid}, report.render()
    mandatory = cc.tier(rid) == cc.MANDATORY
    verdict = f"NOT CONFORMANT ({rid})" if mandatory else "CONFORMANT"
    assert report.verdict.split(" (not observed")[0] == verdict
    assert report.exit_code == (1 if mandatory else 0)


def test_a_prompt_that_reaches_no_field_is_reported(tmp_root: Path, tmp_path: Path) -> None:
    """A client that drops the prompt it was asked for (no field, no _meta): prompt-outside;
    T6 then has nothing to judge (NOT_OBSERVABLE, not a vacuous PASS)."""
    base = cc.scripted_recipe()
    dropping = client_recipe.ClientRecipe(
        "drops the prompt", base.steps, {"append": ("--mode", "append")}, base.env
    )
    plan = cc.plan_for(dropping)
    aimed = [t for t in plan.tests if {OUTSIDE, "T6"} <= set(t.targets)][:1]
    report = cc.conform_client(dropping, Path("."), plan=replace(plan, tests=tuple(aimed)))
    outcome = next(
        o for r in report.results for o in r.outcomes if o.rid == OUTSIDE and r.test.mode
    )
    assert outcome.status == client_run.FAIL and "in no field" in outcome.message
    t6 = [o for r in report.results for o in r.outcomes if o.rid == "T6"]
    assert t6 and {o.status for o in t6} == {client_run.NOT_OBSERVABLE}


def test_a_client_that_never_starts_the_agent_is_not_observed(tmp_root: Path) -> None:
    silent = client_recipe.ClientRecipe(
        "silent", {"new": ("true",), "turn": ("true",)}, {"append": ("x",), "override": ("x",)}
    )
    report = cc.conform_client(silent, Path("."))
    assert report.verdict.startswith("INCONCLUSIVE"), report.render()
    assert report.exit_code == 1
    assert {report.status(r) for r in client_run.IDS} <= {
        client_run.NOT_OBSERVABLE,
        client_run.SKIPPED,
    }


def test_validate_reads_the_client_report_back(tmp_root: Path, tmp_path: Path) -> None:
    recipe = cc.scripted_recipe("sends-unadvertised")
    report = cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
    path = tmp_path / "client.json"
    path.write_text(json.dumps(report.to_json()))
    result = validate_files([path])
    assert "T2" in result.violated
    assert result.messages > 0
    # a line the client sent that is not JSON (the tee records it raw): malformed, said so
    report = cc.conform_client(cc.scripted_recipe("sends-garbage"), Path("."), only=["SCHEMA"])
    path.write_text(json.dumps(report.to_json()))
    found = validate_files([path]).findings
    bad = [f for f in found if f.rid == "malformed"]
    assert bad and bad[0].message == "not JSON (the line passed: 'this line is not JSON')"
    # the agent's -32700 answer to it, id null (JSON-RPC 2.0), is no wire problem
    assert [f for f in found if f.rid == "jsonrpc"] == []


def test_the_command_line(
    tmp_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code = cli.main(
        ["conform-client", "--recipe", "scripted", "--only", "S5", "--report-json", str(out)]
    )
    text = capsys.readouterr().out
    assert code == 0 and text.rstrip().endswith("VERDICT: CONFORMANT"), text
    data = json.loads(out.read_text())
    assert data["requirements"]["S5"]["status"] == client_run.PASS
    assert data["tests"][0]["sent"][:1] == ["initialize"]
    # the coverage, just before the verdict: --only said, with what it left out
    coverage = data["plan"]["coverage"]
    assert f"\n{coverage}\n\nVERDICT: " in text and "aiming at none of --only S5" in coverage


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('name = "x"\n', "steps"),
        ('name = "x"\n[steps]\nnew = ["a"]\n[prompt]\nappend = ["b"]\n', "steps.turn"),
        ('name = "x"\n[steps]\nnew = ["a"]\nturn = []\n[prompt]\nappend = ["b"]\n', "steps.turn"),
        ('name = "x"\n[steps]\nnew = ["a"]\nturn = ["a"]\nfly = ["a"]\n', "steps.fly"),
        (
            'name = "x"\n[steps]\nnew = ["a"]\nturn = ["a"]\n[prompt]\nreplace = ["b"]\n',
            "prompt.replace",
        ),
        ('name = "x"\nbogus = 1\n', "bogus"),
        ("name = \n", "not valid TOML"),
    ],
)
def test_a_bad_recipe_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    path = tmp_path / "client.toml"
    path.write_text(text)
    code = cli.main(["conform-client", "--recipe", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and named in err, err
    assert "Traceback" not in err


def test_unknown_recipe_and_only_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conform-client", "--recipe", "nope"]) == 2
    assert "acpx" in capsys.readouterr().err  # the shipped ones are named
    assert cli.main(["conform-client", "--recipe", "scripted", "--only", "T13"]) == 2
    assert "not a client id" in capsys.readouterr().err


def test_the_tee_passes_lines_unchanged_and_records_them(tmp_path: Path) -> None:
    """The tee between a client and the agent: what it passes is byte for byte what it got;
    a line that is not JSON is recorded raw; each process gets its own number."""
    import subprocess
    import sys

    from simulations.live.process.tee import read_records

    log = tmp_path / "log"
    echo = [sys.executable, "-c", "import sys\nfor l in sys.stdin: sys.stdout.write(l)"]
    tee = [sys.executable, "-m", "simulations.live.process.tee", "--log", str(log), "--", *echo]
    data = b'{"jsonrpc": "2.0", "id": 1, "method": "x"}\nnot json\n'
    for _ in range(2):
        done = subprocess.run(tee, input=data, capture_output=True, timeout=60, check=False)
        assert done.returncode == 0 and done.stdout == data
    records, unread = read_records(log)
    assert unread == 0
    assert read_records(log, limit=3) == (records[:3], len(records) - 3)
    assert [r["process"] for r in records] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert records[0]["message"]["method"] == "x" and records[1]["raw"] == "not json"
    assert {r["direction"] for r in records} == {"send", "recv"}


def _running(*words: str) -> list[int]:
    """Live processes whose argv holds each of ``words`` (a test's own: unique to it)."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().decode(errors="replace") if d.name.isdigit() else ""
            zombie = argv and (d / "stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
        except (OSError, IndexError):
            continue
        if argv and not zombie and all(w in argv for w in words):
            pids.append(int(d.name))
    return pids


def test_a_hanging_client_is_cut_at_the_timeout_and_leaves_nothing(tmp_root: Path) -> None:
    naps = f"{300 + os.getpid() % 1000 / 1000:.3f}"  # a sleep of this test's own
    hang = client_recipe.ClientRecipe(
        "hangs", {"new": ("sleep", naps), "turn": ("true",)}, {"append": ("x",)}
    )
    report = cc.conform_client(hang, Path("."), timeout=1.0, only=["T2"], budget=1)
    (result,) = report.results[:1]
    assert [(s, code) for s, _, code, _ in result.steps] == [("new", None)]
    assert "new: timed out" in " ".join(o.message for o in result.outcomes)
    assert _running("sleep", naps) == [] and list(tmp_root.iterdir()) == []


def test_a_client_that_daemonises_leaves_no_process(tmp_root: Path) -> None:
    naps = f"{300 + os.getpid() % 1000 / 1000:.3f}"
    daemon = ("sh", "-c", f"sleep {naps} > /dev/null 2>&1 & exit 0")
    recipe = client_recipe.ClientRecipe(
        "daemon", {"new": daemon, "turn": daemon}, {"append": ("x",)}
    )
    report = cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
    first = report.results[0]
    assert first.steps[0][0] == "new" and {s for s, _, _, _ in first.steps} >= {"new", "turn"}
    assert {c for _, _, c, _ in first.steps} == {0}
    assert _running("sleep", naps) == []


def test_the_tee_records_a_request_before_its_answer(tmp_path: Path) -> None:
    """A line is recorded before it is passed on: an agent that answers the moment the line
    reaches it never has its answer recorded ahead of the request (validate would pair
    nothing). The agent here answers inside the write that passes the line on."""
    import io

    from simulations.live.process import tee

    (tmp_path / "log").mkdir()
    log = tee._Log(tmp_path / "log" / "process-0.ndjson", 0)
    answer = b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n'

    class AnsweringAgent(io.BytesIO):
        def write(self, data: object) -> int:
            log.write("recv", answer, len(answer))
            return len(data)  # type: ignore[arg-type]

    request = b'{"jsonrpc": "2.0", "id": 1, "method": "x"}\n'
    tee._pump(io.BytesIO(request), AnsweringAgent(), log, "send")
    log.close()
    records, _ = tee.read_records(tmp_path / "log")
    assert [r["direction"] for r in records] == ["send", "recv"]


def test_what_a_client_leaves_in_tmp_is_said_and_never_taken(tmp_root: Path) -> None:
    """acpx leaves its queue sockets' folder at a fixed /tmp/acpx-<hash>, whatever its TMPDIR:
    a recipe names such leftovers (``leaves``). In the sandbox they land in the step's own
    /tmp and go with it; where they reach the host's /tmp the test names them and leaves them
    (another job may have made them: the tool cannot tell); what was there before stays."""
    stem = f"/tmp/acp-sysprompt-test-{os.getpid()}"
    before = Path(f"{stem}-before")
    before.mkdir(exist_ok=True)
    step = ("sh", "-c", f"mkdir -p {stem}-left-$$ && touch {stem}-file-$$")
    recipe = client_recipe.ClientRecipe(
        "leaves", {"new": step, "turn": step}, {"append": ("x",)}, leaves=(f"{stem}-*",)
    )
    try:
        report = cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
        first = report.results[0]
        assert first.steps[0][2] == 0
        assert before.is_dir()
        made = sorted(str(p) for p in Path("/tmp").glob(f"{Path(stem).name}-*") if p != before)
        said = " ".join(f for r in report.results for f in r.findings)
        if report.sandboxed:
            assert made == [] and said == ""
        else:  # each test made two of each, and named them
            assert len(made) == 4 * len(report.results) and all(m in said for m in made)
    finally:
        for p in Path("/tmp").glob(f"{Path(stem).name}-*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()


@pytest.mark.parametrize(
    "leaves", ['["tmp/x-*"]', '["/*/x"]', '["/tmp"]', '["/tmp/../etc/x"]', '"/tmp/x-*"']
)
def test_a_leaves_pattern_must_name_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], leaves: str
) -> None:
    path = tmp_path / "client.toml"
    path.write_text(f'name = "x"\nleaves = {leaves}\n[steps]\nnew = ["a"]\nturn = ["a"]\n')
    assert cli.main(["conform-client", "--recipe", str(path)]) == 2
    assert "leaves" in capsys.readouterr().err


# ---- the derived plan (issue 39) -----------------------------------------------------------

# the fixed plan it replaced: (caps, mode, steps) of its 11 tests
OLD_PLAN = [
    ("systemPrompt=none,load,resume,close", "append", ("new", "turn")),
    ("systemPrompt=none,load,resume,close", "override", ("new", "turn")),
    ("systemPrompt=append,load,resume,close", "override", ("new", "turn")),
    ("systemPrompt=override,load,resume,fork,close", "append", ("new", "turn")),
    ("systemPrompt=override,load,resume,fork,close", "override", ("new", "turn")),
    ("systemPrompt=override,load", "override", ("new", "turn")),
    ("systemPrompt=override,resume", "override", ("new", "turn")),
    ("systemPrompt=override", "override", ("new", "turn")),
    ("systemPrompt=override,load,resume,fork", "override", ("new", "fork")),
    ("systemPrompt=override,load,resume", "override", ("new", "fork")),
    ("systemPrompt=override,load,resume", None, ("new", "close")),
]


def test_the_plan_is_derived_from_the_client_rules() -> None:
    """The capabilities that matter come from the CLIENT table's guards; the plan reaches each
    situation of every profile × sequence once, starts each scenario with new, and reaches
    every situation the fixed plan it replaced did."""
    assert {s: cp.knobs(s) for s in cp.STEPS} == {
        "new": ("system_prompt",),
        "turn": ("system_prompt", "load_session", "resume"),
        "fork": ("system_prompt", "fork"),
        "close": ("close",),
    }
    assert [s for s in cp.STEPS if cp.resends(s)] == ["turn", "fork"]
    plan = cc.plan_for(cc.scripted_recipe())
    # 3 systemPrompt values x 6 methods; each profile with no prompt, or 2 modes x 4 writings
    assert (plan.profiles, plan.sequences, plan.length) == (3 * 2**6, 3 * 2**6 * 9, 7)
    assert (len(plan.tests), plan.steps, plan.restarts, plan.situations) == (36, 152, 35, 217)
    reached = [cp.situations(t) for t in plan.tests]
    seen = set().union(*reached)
    assert len(seen) == plan.situations
    assert len({t.name for t in plan.tests}) == len(plan.tests)
    old = [cp.make_test(cp.profile_of(c), m, s, client_run.IDS) for c, m, s in OLD_PLAN]
    assert set().union(*map(cp.situations, old)) < seen
    # a shorter bound reaches every situation too, with more scenarios
    shorter = cc.plan_for(cc.scripted_recipe(), length=4)
    assert shorter.situations == plan.situations and len(shorter.tests) > len(plan.tests)


def test_the_acpx_plan_has_no_fork_and_s4_is_not_observable(tmp_root: Path) -> None:
    """acpx has no fork step: no scenario forks (fork varies only as a capability beside a
    turn's or a close's own), and S4 is said to be out of the plan's reach (NOT_OBSERVABLE
    for the run, named in the verdict), not silently left out."""
    acpx = client_recipe.load_client_recipe("acpx")
    plan = cc.plan_for(acpx)
    assert "fork" in plan.knobs and "fork" not in cp.recipe_knobs(acpx.steps)
    assert all("fork" not in t.steps for t in plan.tests)
    assert (len(plan.tests), plan.profiles, plan.situations) == (23, 192, 113)
    scripted = cc.scripted_recipe()
    nofork = replace(scripted, steps={k: v for k, v in scripted.steps.items() if k != "fork"})
    plan = cc.plan_for(nofork)  # its first scenario alone: a whole run, fast
    report = cc.conform_client(nofork, Path("."), plan=replace(plan, tests=plan.tests[:1]))
    (s4,) = report.outcomes("S4")
    assert s4.status == client_run.NOT_OBSERVABLE and "the recipe has no fork step" in s4.message
    assert report.verdict.startswith("CONFORMANT (not observed: "), report.render()
    assert "S4" in report.verdict


def test_a_fork_with_override_after_the_append_fallback_fails_t3(tmp_root: Path) -> None:
    """A client that falls back from override to append on session/new (the agent offers
    append only), then forks with override: T3 broken on the fork. The fixed plan never forked
    on an append-only agent; the derived plan has the scenario that does (here: its forking
    scenarios that aim at T3)."""
    plan = cc.plan_for(cc.scripted_recipe())
    forking = tuple(
        t
        for t in plan.tests
        if t.mode == "override"
        and "systemPrompt=append" in t.caps
        and ",fork" in t.caps
        and "fork" in t.steps[: (*t.steps, "restart").index("restart")]
    )[:1]
    assert forking
    recipe = cc.scripted_recipe("fork-override")
    report = cc.conform_client(recipe, Path("."), plan=replace(plan, tests=forking))
    assert report.verdict == "NOT CONFORMANT (T3)", report.render()
    failed = [
        (r.test, o) for r in report.results for o in r.outcomes if o.status == client_run.FAIL
    ]
    assert failed and {o.rid for _, o in failed} == {"T3"}
    for test, outcome in failed:
        caps = cp.profile_of(test.caps)
        assert caps.system_prompt.value == "append" and caps.fork
        assert test.mode == "override" and "session/fork" in outcome.message


def test_the_run_says_its_plan_its_coverage_and_what_a_budget_dropped(
    tmp_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan's size and an estimate before the run (stderr); the coverage before the
    verdict and in the JSON; --budget cuts the plan by its order (the first test runs), and
    the run cut so reached no verdict: INCOMPLETE, exit 4, never CONFORMANT."""
    out = tmp_path / "r.json"
    args = ["conform-client", "--recipe", "scripted", "--budget", "1", "--report-json", str(out)]
    assert cli.main(args) == INCOMPLETE_EXIT == 4
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err[0].startswith("client plan: criterion every user action in every state ")
    assert "217 of 217 situations; 36 scenarios, 152 steps, 35 restarts" in err[0]
    assert err[1].startswith("running 36 of them (187 steps): about ") and "--budget 1s" in err[1]
    text = captured.out.rstrip().splitlines()
    assert text[-1] == "VERDICT: INCOMPLETE (1 of 36 tests; the failures so far: none)"
    assert text[-2] == "" and "cut by --budget after 1 of 36 tests" in captured.out
    data = json.loads(out.read_text())
    assert (data["outcome"], data["cut"], data["tests_run"], data["tests_planned"]) == (
        "INCOMPLETE",
        "budget",
        1,
        36,
    )
    plan = data["plan"]
    assert text[-3] == plan["coverage"]
    ran = len(plan["run"])
    assert ran == 1 and ran + len(plan["not_run"]) == plan["scenarios"] == 36
    assert plan["coverage"].startswith(
        "covered 1 of 36 scenarios of the client plan (217 of 217 situations of its "
        "criterion; length ≤ 7); not run: 35 past --budget 1s (the plan's lowest priority"
    )
    assert {n["why"].split(" (")[0] for n in plan["not_run"]} == {"past --budget 1s"}
    assert [t["name"] for t in data["tests"]] == plan["run"]


def test_a_budget_cut_after_a_failure_is_not_conformant_by_that_failure_alone(
    tmp_root: Path,
) -> None:
    """A failure among the tests that ran is real: a run cut by --budget after it is NOT
    CONFORMANT (exit 1), naming the failed id and no id the cut left unreached."""
    recipe = cc.scripted_recipe("sends-unadvertised")
    report = cc.conform_client(recipe, Path("."), only=["T2"], budget=0.001)
    assert report.budget_cut and len(report.results) == 1 < report.planned, report.render()
    assert report.verdict == "NOT CONFORMANT (T2)" and report.exit_code == 1, report.render()
    assert report.to_json()["outcome"] == "NOT CONFORMANT"


def test_an_interrupt_reports_what_ran_and_what_it_left(tmp_root: Path) -> None:
    seen: list[str] = []

    def progress(line: str) -> None:
        seen.append(line)
        if line.startswith("[2/"):
            raise KeyboardInterrupt

    report = cc.conform_client(cc.scripted_recipe(), Path("."), progress=progress)
    assert report.interrupted and report.exit_code == cc.INTERRUPTED
    assert report.verdict == "INCOMPLETE (1 of 36 tests; the failures so far: none)"
    assert len(report.results) == 1 and len(report.not_run) == 35
    assert "not run: 35 left by the interrupt" in report.coverage()
    assert list(tmp_root.iterdir()) == []


SCENARIOS = Path(__file__).parent / "fixtures" / "client_scenarios" / "mine.toml"


def test_a_user_adds_scenarios_of_their_own(
    tmp_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--scenarios FILE: a user's scenarios come first (each caps × its steps), the derived
    ones after; the coverage names the file."""
    path = SCENARIOS
    assert (
        cli.main(["conform-client", "--recipe", "scripted", "--scenarios", str(path), "--list"])
        == 0
    )
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("client plan: criterion ") and "39 scenarios" in listed[0]
    assert "3 of them from" in listed[0]
    assert listed[1].startswith("  systemPrompt=append,fork | new:override fork fork turn  (")
    assert listed[2].startswith("  closes twice: systemPrompt=override,close | new close close  (")
    assert listed[3].startswith("  closes twice: systemPrompt=none,close | new close close  (")
    recipe = cc.scripted_recipe()
    plan = cc.plan_for(recipe, scenarios=str(path))
    mine = replace(plan, tests=plan.tests[:3])
    report = cc.conform_client(recipe, Path("."), plan=mine)
    assert report.failed == [] and report.exit_code == 0, report.render()
    first = report.results[0]
    assert [s for s, _, _, _ in first.steps] == ["new", "fork", "fork", "turn"]
    assert first.test.source == str(path)
    assert report.coverage() == (
        f"covered 3 of 3 scenarios of the client plan (217 of 217 situations of its "
        f"criterion; length ≤ 7; 3 from {path})"
    )


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("scenario = \n", "not TOML"),
        ('steps = ["new"]\n', "steps: unknown key"),
        ("scenario = 1\n", "scenario: a list of tables"),
        ('[[scenario]]\ncaps = "systemPrompt=append"\n', "scenario[1].steps"),
        ('[[scenario]]\nsteps = ["new"]\n', "scenario[1].caps"),
        ('[[scenario]]\ncaps = "systemPrompt=sideways"\nsteps = ["new"]\n', "scenario[1].caps"),
        ('[[scenario]]\ncaps = "systemPrompt=none,teleport"\nsteps = ["new"]\n', "teleport"),
        ('[[scenario]]\ncaps = ""\nsteps = ["turn"]\n', "scenario[1].steps[0]"),
        ('[[scenario]]\ncaps = ""\nsteps = ["new", "new"]\n', "scenario[1].steps[1]"),
        ('[[scenario]]\ncaps = ""\nsteps = ["new", "fly"]\n', "scenario[1].steps[1]"),
        ('[[scenario]]\ncaps = ""\nsteps = ["new:replace"]\n', "scenario[1].steps[0]"),
        ('[[scenario]]\ncaps = ""\nsteps = ["new"]\nwhen = 1\n', "scenario[1].when"),
        ('[[scenario]]\ncaps = ""\nsteps = ["new"]\nname = 3\n', "scenario[1].name"),
    ],
)
def test_a_bad_scenarios_file_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(text)
    code = cli.main(["conform-client", "--recipe", "scripted", "--scenarios", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and named in err, err
    assert "Traceback" not in err and str(path) in err


def test_a_scenario_the_recipe_cannot_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[[scenario]]\ncaps = "systemPrompt=append,fork"\nsteps = ["new", "fork"]\n')
    assert cli.main(["conform-client", "--recipe", "acpx", "--scenarios", str(path)]) == 2
    assert "steps[1]: 'fork': the recipe has no fork step" in capsys.readouterr().err
    missing = tmp_path / "nope.toml"
    assert cli.main(["conform-client", "--recipe", "scripted", "--scenarios", str(missing)]) == 2
    assert "cannot read" in capsys.readouterr().err
    for bad in (["--length", "0"], ["--length", "9"], ["--budget", "0"]):
        assert cli.main(["conform-client", "--recipe", "scripted", *bad]) == 2
        assert bad[0] in capsys.readouterr().err
