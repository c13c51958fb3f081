"""``--junit FILE`` (issue 58, item 5): the JUnit XML CI systems read, from ``conform``,
``conform-client``, ``validate`` and ``check``.

Every file written here is checked by ``schema_problems``: the rules of the JUnit schema CI
systems read — the Jenkins xUnit plugin's ``junit-10.xsd`` (jenkinsci/xunit-plugin,
``src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd``, MIT
licence), restated here as checks (no copy of it is kept): ``testsuites`` holds only
``testsuite`` s and takes only ``name``, ``time``, ``tests``, ``failures`` and ``errors``; a
``testsuite`` must have ``name``, ``tests``, ``failures`` and ``errors``, may have
``skipped``, ``time``, ``timestamp``, ``hostname``, ``id``, ``package``, ``group``, ``file``,
``log`` and ``url``, and holds ``properties``, ``testcase``, ``system-out`` and
``system-err``; a ``property`` has exactly ``name`` and ``value``; a ``testcase`` must have
``name``, may have ``classname``, ``time`` and ``group``, and holds ``failure``, ``error``,
``skipped``, ``system-out`` and ``system-err`` (the rerun and flaky elements aside); those
take ``message`` and ``type`` and text, no element; a ``time`` matches the schema's
``SUREFIRE_TIME`` pattern. Stricter than the schema, as the readers count: a case has at most
one of ``failure``, ``error`` and ``skipped``, and every count attribute equals the cases it
counts. The checks are shown to fail on planted faults.

The counts are checked on known runs: a mutant of the reference agent that breaks T13
(``conform``), its wire (``validate``), the same mutant's model (``check``), a client that
sends a prompt unadvertised (``conform-client``); and a run cut short carries INCOMPLETE.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simulations import cli
from simulations.outputs.junit import (
    ERROR,
    FAILED,
    INCOMPLETE,
    PASSED,
    SKIPPED,
    Case,
    Suite,
    suite_version,
    to_xml,
    xml_text,
)

ROOT = Path(__file__).resolve().parents[1]
MUTANT = "v1_override_keeps_default"  # keeps the agent's own prompt under override: T13

# ---- the schema's rules -------------------------------------------------------------------

TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")  # SUREFIRE_TIME
ROOT_ATTRS = {"name", "time", "tests", "failures", "errors"}
SUITE_NEEDS = {"name", "tests", "failures", "errors"}
SUITE_MAY = {"skipped", "time", "timestamp", "hostname", "id", "package", "group", "file"}
SUITE_MAY |= {"log", "url"}
SUITE_HOLDS = {"testsuite", "properties", "testcase", "system-out", "system-err"}
CASE_MAY = {"name", "classname", "time", "group"}
OUTCOME_TAGS = {"failure", "error", "skipped"}
CASE_HOLDS = OUTCOME_TAGS | {"system-out", "system-err"}
# what XML 1.0 forbids in a document (the writer escapes them)
FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def schema_problems(data: bytes) -> list[str]:
    """Where ``data`` breaks the schema's rules or its own counts (module docstring)."""
    problems: list[str] = []
    text = data.decode("utf-8")
    if FORBIDDEN.search(text):
        return ["a character XML 1.0 forbids"]
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        return [f"not well-formed: {e}"]
    if root.tag != "testsuites":
        return [f"root is {root.tag}, not testsuites"]
    problems += [f"testsuites @{a}" for a in set(root.attrib) - ROOT_ATTRS]
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in root:
        if suite.tag != "testsuite":
            problems.append(f"testsuites holds {suite.tag}")
            continue
        problems += suite_problems(suite, totals)
    for key, n in totals.items():
        if key in root.attrib and root.get(key) != str(n):
            problems.append(f"testsuites {key}={root.get(key)}, its suites say {n}")
    if "time" in root.attrib and not TIME.fullmatch(root.get("time", "")):
        problems.append(f"testsuites time {root.get('time')!r}")
    return problems


def suite_problems(suite: ET.Element, totals: dict[str, int]) -> list[str]:
    problems = [f"testsuite lacks @{a}" for a in SUITE_NEEDS - set(suite.attrib)]
    problems += [f"testsuite @{a}" for a in set(suite.attrib) - SUITE_NEEDS - SUITE_MAY]
    if "time" in suite.attrib and not TIME.fullmatch(suite.get("time", "")):
        problems.append(f"testsuite time {suite.get('time')!r}")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for child in suite:
        if child.tag not in SUITE_HOLDS:
            problems.append(f"testsuite holds {child.tag}")
        elif child.tag == "properties":
            for p in child:
                if p.tag != "property" or set(p.attrib) != {"name", "value"} or len(p):
                    problems.append(f"properties holds {p.tag} {sorted(p.attrib)}")
        elif child.tag == "testcase":
            problems += case_problems(child)
            counts["tests"] += 1
            tags = [c.tag for c in child]
            counts["failures"] += "failure" in tags
            counts["errors"] += "error" in tags
            counts["skipped"] += "skipped" in tags
        elif child.tag == "testsuite":
            problems.append("a testsuite in a testsuite (the writer makes none)")
    for key, n in counts.items():
        if suite.get(key, "0") != str(n):
            problems.append(f"testsuite {suite.get('name')!r} {key}={suite.get(key)}, has {n}")
        if key in totals:
            totals[key] += n
    return problems


def case_problems(case: ET.Element) -> list[str]:
    problems = [] if "name" in case.attrib else ["testcase lacks @name"]
    problems += [f"testcase @{a}" for a in set(case.attrib) - CASE_MAY]
    if "time" in case.attrib and not TIME.fullmatch(case.get("time", "")):
        problems.append(f"testcase time {case.get('time')!r}")
    outcomes = [c for c in case if c.tag in OUTCOME_TAGS]
    if len(outcomes) > 1:
        problems.append(f"testcase {case.get('name')!r} has {len(outcomes)} outcomes")
    for c in case:
        if c.tag not in CASE_HOLDS:
            problems.append(f"testcase holds {c.tag}")
        if len(c):
            problems.append(f"{c.tag} holds an element")
        if c.tag in OUTCOME_TAGS:
            problems += [f"{c.tag} @{a}" for a in set(c.attrib) - {"message", "type"}]
        elif c.attrib:
            problems.append(f"{c.tag} has attributes")
    return problems


def outcomes(data: bytes) -> dict[str, str]:
    """Each case (``name``) → passed, failed, error or skipped."""
    tag_of = {"failure": FAILED, "error": ERROR, "skipped": SKIPPED}
    out = {}
    for case in ET.fromstring(data).iter("testcase"):
        tags = [tag_of[c.tag] for c in case if c.tag in tag_of]
        out[case.get("name", "")] = tags[0] if tags else PASSED
    return out


def totals(data: bytes) -> dict[str, int]:
    suites = list(ET.fromstring(data))
    return {
        k: sum(int(s.get(k, "0")) for s in suites)
        for k in ("tests", "failures", "errors", "skipped")
    }


def properties(data: bytes) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in ET.fromstring(data).iter("property")}


# ---- the writer -----------------------------------------------------------------------------


def test_the_writer_counts_its_cases_and_escapes_what_xml_forbids() -> None:
    hostile = "bell\x07 esc\x1b[31m nul\x00 \ud800 \ufffe <&\"'> ok"
    cases = (
        Case("A", "k", PASSED, output=hostile),
        Case("B", "k", FAILED, hostile, hostile, reproduce="acp-sysprompt x --only B"),
        Case("C", "k", SKIPPED, "why"),
        Case("D", "k", ERROR, "cut"),
        Case("E\x01", "k", SKIPPED, "x" * 5000, "y" * 200_000),
    )
    data = to_xml([Suite("s\x02", cases, (("p", hostile),))], "n")
    assert schema_problems(data) == []
    assert totals(data) == {"tests": 5, "failures": 1, "errors": 1, "skipped": 2}
    root = ET.fromstring(data)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    failure = root.find(".//failure")
    assert failure is not None and failure.text is not None
    assert "bell\\x07 esc\\x1b[31m nul\\x00 \\ud800 \\ufffe <&\"'> ok" in failure.text
    assert failure.text.endswith("reproduce: acp-sysprompt x --only B")
    assert "\n" not in (failure.get("message") or "")
    assert len(ET.tostring(root)) < 200_000  # each text clipped to its bound
    assert xml_text("ok\x7f\u0085") == "ok\x7f\u0085"  # allowed by XML 1.0: kept as they are


def test_an_outcome_outside_the_four_is_refused() -> None:
    with pytest.raises(ValueError, match="outcome 'not_observable'"):
        Case("A", "k", "not_observable")


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda x: x.replace(b'skipped="1"', b'skipped="0"', 1), "skipped=0, has 1"),
        (
            lambda x: x.replace(
                b'<testsuites name="n" tests="3"', b'<testsuites name="n" tests="4"'
            ),
            "testsuites tests=4",
        ),
        (lambda x: x.replace(b"<skipped ", b'<skipped bad="1" ', 1), "skipped @bad"),
        (lambda x: x.replace(b'<testcase name="A"', b"<testcase", 1), "lacks @name"),
        (lambda x: x.replace(b"</properties>", b"<extra /></properties>", 1), "properties holds"),
        (lambda x: x.replace(b'time="0.000"', b'time="1s"', 1), "time '1s'"),
        (
            lambda x: x.replace(b"</testsuites>", b'<testcase name="x" /></testsuites>'),
            "testsuites holds testcase",
        ),
        (lambda x: x.replace(b"ok", b"o\x1bk", 1), "forbids"),
    ],
    ids=["skipped", "total", "attribute", "name", "property", "time", "nesting", "control"],
)
def test_the_schema_checks_catch_a_planted_fault(edit: object, said: str) -> None:
    data = to_xml(
        [
            Suite(
                "s",
                (Case("A", "k", output="ok"), Case("B", "k", FAILED, "m"), Case("C", "k", SKIPPED)),
                (("p", "v"),),
            )
        ],
        "n",
    )
    assert schema_problems(data) == []
    assert callable(edit)
    broken = edit(data)
    assert broken != data
    found = schema_problems(broken)
    assert any(said in p for p in found), found


# ---- refused before the run -----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--bound", "tiny", "--mutant", MUTANT],
        ["validate", str(ROOT / "tests" / "fixtures" / "validate" / "sacp-tee.log")],
        ["conform-client", "--recipe", "scripted"],
        ["conform", "--bound", "tiny"],
    ],
    ids=["check", "validate", "conform-client", "conform"],
)
@pytest.mark.parametrize("where", ["dir", "under-a-file"])
def test_a_junit_file_that_cannot_be_written_is_refused_before_the_run(
    argv: list[str], where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    target = tmp_path if where == "dir" else tmp_path / "file" / "more" / "j.xml"
    agent = ["--", "true"] if argv[0] == "conform" else []
    assert cli.main([*argv, "--junit", str(target), *agent]) == 2
    out, err = capsys.readouterr()
    assert out == "", out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("acp-sysprompt: error: argument --junit: ")
    said = "is a directory" if where == "dir" else "is not a directory"
    assert said in lines[0], lines


# ---- known runs -----------------------------------------------------------------------------


def _acp(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulations", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_check_of_a_mutant_counts_its_failure_and_its_skips(tmp_path: Path) -> None:
    """The mutant breaks T13 (its declared id): one failure, with its steps and the command;
    every n/a, vacuous or non-failing verdict skipped, never passed."""
    junit = tmp_path / "check.xml"
    done = _acp("check", "--mutant", MUTANT, "--bound", "tiny", "--json", "--junit", str(junit))
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    data = junit.read_bytes()
    assert schema_problems(data) == []
    got = outcomes(data)
    assert [rid for rid, o in got.items() if o == FAILED] == ["T13"]
    holds = {rid for rid, v in doc["verdicts"].items() if v == "holds"} - set(doc["vacuous"])
    assert {rid for rid, o in got.items() if o == PASSED} == holds
    assert totals(data) == {
        "tests": len(doc["verdicts"]),
        "failures": 1,
        "errors": 0,
        "skipped": len(doc["verdicts"]) - len(holds) - 1,
    }
    failure = ET.fromstring(data).find(".//testcase[@name='T13']/failure")
    assert failure is not None and failure.text is not None
    assert "T13 violated" in failure.text and f"--mutant {MUTANT}" in failure.text
    props = properties(data)
    assert props["acp-sysprompt.version"] == suite_version() != "unknown"
    assert props["acp-sysprompt.revision"] == "v1-stable"


def test_conform_of_a_faulty_agent_and_validate_of_its_wire(tmp_path: Path) -> None:
    """conform: T13 a failure with its evidence and both commands that reproduce it, the
    verdict a failure, every id whose status is not PASS skipped (never passed); validate of
    the failing test's wire: T13 a failure, P9 skipped."""
    junit, out, report = tmp_path / "conform.xml", tmp_path / "out", tmp_path / "r.json"
    agent = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    agent += ["--mutant", MUTANT, "--store", "{store}"]
    done = _acp(
        "conform",
        "--bound",
        "tiny",
        "--only",
        "T13",
        "--out",
        str(out),
        "--junit",
        str(junit),
        "--report-json",
        str(report),
        "--",
        *agent,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    data = junit.read_bytes()
    assert schema_problems(data) == []
    got = outcomes(data)
    assert {n for n, o in got.items() if o == FAILED} == {"T13", "VERDICT"}
    reqs = json.loads(report.read_text())["requirements"]
    assert {rid for rid, r in reqs.items() if r["status"] == "PASS"} == {
        n for n, o in got.items() if o == PASSED
    }
    assert set(got) == {*reqs, "VERDICT"}
    assert totals(data)["skipped"] == sum(r["status"] != "PASS" for r in reqs.values()) - 1
    text = ET.fromstring(data).find(".//testcase[@name='T13']/failure")
    assert text is not None and text.text is not None
    assert "reproduce: acp-sysprompt conform --revision v1-stable --bound tiny --only T13 --" in (
        text.text
    )
    assert f"acp-sysprompt replay {out / 'T13' / 'trace.itf.json'} --" in text.text

    vjunit = tmp_path / "validate.xml"
    done = _acp("validate", str(out / "T13" / "live.ndjson"), "--junit", str(vjunit))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    vdata = vjunit.read_bytes()
    assert schema_problems(vdata) == []
    assert outcomes(vdata) == {"T13": FAILED, "P9": SKIPPED}
    assert properties(vdata)["acp-sysprompt.revision"] == "v1-stable"


def test_a_conform_run_cut_short_says_incomplete_never_passed(tmp_path: Path) -> None:
    """A --budget that leaves tests out: an INCOMPLETE error case; the ids not judged
    skipped."""
    junit = tmp_path / "conform.xml"
    agent = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    done = _acp(
        "conform",
        "--bound",
        "tiny",
        "--no-coverage",
        "--budget",
        "0.05",
        "--junit",
        str(junit),
        "--",
        *agent,
        "--store",
        "{store}",
    )
    assert done.returncode in (0, 1) or done.returncode > 3, done.stderr[-2000:]
    data = junit.read_bytes()
    assert schema_problems(data) == []
    got = outcomes(data)
    assert got[INCOMPLETE] == ERROR
    case = ET.fromstring(data).find(f".//testcase[@name='{INCOMPLETE}']/error")
    assert case is not None and "--budget left out" in (case.get("message") or "")


def test_conform_client_of_a_faulty_client(tmp_path: Path) -> None:
    """A client that sends systemPrompt to an agent that did not advertise it: T2 a failure,
    the verdict a failure; cut by --budget after its first scenario: INCOMPLETE."""
    recipe = tmp_path / "faulty.toml"
    shipped = ROOT / "simulations" / "live" / "conform_client" / "recipes" / "scripted.toml"
    text = shipped.read_text(encoding="utf-8").replace('name = "scripted"', 'name = "faulty"')
    recipe.write_text(text + '\n[env]\nACP_SYSPROMPT_CLIENT_BUILD = "sends-unadvertised"\n')
    junit, report = tmp_path / "client.xml", tmp_path / "client.json"
    done = _acp(
        "conform-client",
        "--recipe",
        str(recipe),
        "--only",
        "T2",
        "--budget",
        "1",
        "--junit",
        str(junit),
        "--report-json",
        str(report),
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    data = junit.read_bytes()
    assert schema_problems(data) == []
    got = outcomes(data)
    assert got["T2"] == FAILED and got["VERDICT"] == FAILED and got[INCOMPLETE] == ERROR
    assert totals(data)["failures"] == 2
    reqs = json.loads(report.read_text())["requirements"]
    assert {n for n, o in got.items() if o == PASSED} == {
        rid for rid, r in reqs.items() if r["status"] == "PASS"
    }
    failure = ET.fromstring(data).find(".//testcase[@name='T2']/failure")
    assert failure is not None and "--only T2" in (failure.text or "")


def test_an_interrupted_conform_run_writes_what_ran_and_incomplete(tmp_path: Path) -> None:
    """Ctrl-C once the plan is made: exit 130, the file written with an INCOMPLETE error case
    saying it was interrupted; no id is a pass that no test judged."""
    import signal

    junit = tmp_path / "conform.xml"
    agent = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    argv = [sys.executable, "-m", "simulations", "conform", "--bound", "tiny", "--no-coverage"]
    argv += ["--junit", str(junit), "--", *agent, "--store", "{store}"]
    with subprocess.Popen(
        argv,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "progress: plan: " in line:
                break
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert proc.returncode not in (0, 1, 2, 3), proc.returncode
    data = junit.read_bytes()
    assert schema_problems(data) == []
    error = ET.fromstring(data).find(f".//testcase[@name='{INCOMPLETE}']/error")
    assert error is not None and "interrupted" in (error.get("message") or "")
    assert outcomes(data)["VERDICT"] != PASSED


def test_check_of_a_population_fails_a_lost_p_id_only_under_strict(tmp_path: Path) -> None:
    """v1-stable's population on tiny loses some P ids: skipped without --strict (exit 0),
    the same ids failures with it (exit 1); an amendment adds its claims' case."""
    counts = {}
    for strict in (False, True):
        junit = tmp_path / f"p{strict}.xml"
        flags = ["--strict"] if strict else []
        done = _acp(
            "check",
            "--revision",
            "v1-stable",
            "--bound",
            "tiny",
            "--quiet",
            *flags,
            "--junit",
            str(junit),
        )
        assert done.returncode == (1 if strict else 0), done.stderr[-2000:]
        data = junit.read_bytes()
        assert schema_problems(data) == []
        counts[strict] = totals(data)
        lost = {n for n, o in outcomes(data).items() if o != PASSED}
        assert lost and all(n.startswith("P") for n in lost)
    assert counts[False]["failures"] == 0 and counts[True]["skipped"] == 0
    assert counts[False]["skipped"] == counts[True]["failures"] > 0
    junit = tmp_path / "amend.xml"
    done = _acp(
        "check", "--amend", "stable-prompt", "--bound", "tiny", "--quiet", "--junit", str(junit)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert outcomes(junit.read_bytes())["amendment stable-prompt"] == PASSED


def test_compare_refuses_junit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["check", "--compare", "v1-stable", "rfd-final", "--junit", str(tmp_path / "j.xml")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "argument --compare:" in err and "--junit" in err, err


def test_a_recipe_not_run_still_writes_its_file(tmp_path: Path) -> None:
    """A recipe whose runtime is missing is skipped, not failed (exit 0): the file a CI waits
    for holds one skipped case saying why."""
    recipe = tmp_path / "later.toml"
    recipe.write_text(
        'name = "later"\nversion = "1"\napi = "chat"\nruntime = "python>=3.99"\n'
        'requirements = "python/x.txt"\ncommand = ["{venv}/bin/x"]\n'
    )
    junit = tmp_path / "ci" / "conform.xml"
    done = _acp("conform", "--recipe", str(recipe), "--junit", str(junit))
    assert done.returncode == 0 and done.stdout.startswith("SKIPPED: recipe later: ")
    data = junit.read_bytes()
    assert schema_problems(data) == []
    assert outcomes(data) == {"VERDICT": SKIPPED}
