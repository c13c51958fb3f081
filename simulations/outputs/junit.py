"""``--junit FILE``: a run's results as JUnit XML, the test report CI systems read.

Scope
    The one writer of every command's ``--junit`` (``conform``, ``conform-client``,
    ``validate``, ``check``): each command turns its own report into a neutral list of
    ``Suite`` s of ``Case`` s, and ``write`` makes the file; ``check_target`` refuses, before a
    run, a file that cannot be written (one line naming the argument, exit 2), as ``--out``
    is. ``suite_properties`` gives the properties every suite carries: the version of
    acp-sysprompt that judged, the revision judged, and the command.

Abstractions
    A case's outcome is ``PASSED``, ``FAILED``, ``SKIPPED`` or ``ERROR`` and nothing else: a
    status that is neither a pass nor a failure (skipped, not observable, not tested, an id
    whose failure does not block the verdict) is written ``skipped`` with its reason, never a
    pass; a run cut short (interrupted, a budget) carries an ``error`` case named
    ``INCOMPLETE``. A failure's text holds its evidence and the command that reproduces it.
    The counts of each suite (``tests``, ``failures``, ``errors``, ``skipped``) and of the
    whole file are those of its cases. Every text is made XML 1.0: characters it forbids
    (control characters but tab, newline and carriage return; lone surrogates; U+FFFE,
    U+FFFF) are written as ``\\xNN`` / ``\\uNNNN`` escapes, and each text is clipped to a
    bound (``MESSAGE_CHARS``, ``TEXT_CHARS``): an agent's answers reach these files.
    ``xml.etree.ElementTree`` escapes the rest.

Source
    The JUnit XML format as CI systems read it: the Jenkins xUnit plugin's ``junit-10.xsd``
    (jenkinsci/xunit-plugin, MIT licence) — ``testsuites`` of ``testsuite`` s (``name``,
    ``tests``, ``failures``, ``errors`` required; ``skipped``, ``time``, ``timestamp``
    optional), each with ``properties`` and ``testcase`` s (``name``, ``classname``, ``time``)
    whose children are ``failure``, ``error``, ``skipped`` (``message``, ``type``, a text),
    ``system-out`` and ``system-err``. ``tests/test_junit.py`` checks every file against those
    rules.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from simulations.usage import UsageError

PASSED, FAILED, SKIPPED, ERROR = "passed", "failed", "skipped", "error"
OUTCOMES = (PASSED, FAILED, SKIPPED, ERROR)
INCOMPLETE = "INCOMPLETE"  # the name of the case a run cut short carries
MESSAGE_CHARS = 1000  # characters of a message attribute (one line)
TEXT_CHARS = 64 * 1024  # characters of a failure's, a skip's or an output's text
PACKAGE = "acp-sysprompt-model"

# what XML 1.0 allows: tab, newline, carriage return, U+0020-U+D7FF, U+E000-U+FFFD, U+10000-…
_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class Case:
    """One test case: ``name`` (a requirement id, a test), ``classname`` (the tool, the tier),
    its outcome, a one-line ``message``, ``text`` (the evidence, or why it was skipped),
    ``reproduce`` (a command line that runs it again), ``seconds`` where known, ``output``
    (what a passing case checked: ``system-out``)."""

    name: str
    classname: str
    outcome: str = PASSED
    message: str = ""
    text: str = ""
    reproduce: str = ""
    seconds: float | None = None
    output: str = ""
    kind: str = ""  # the failure's, error's or skip's ``type``: the tool's own status

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome {self.outcome!r}: expected one of {', '.join(OUTCOMES)}")


@dataclass(frozen=True)
class Suite:
    """A test suite: its cases and properties (name, value), when it ran and how long."""

    name: str
    cases: tuple[Case, ...]
    properties: tuple[tuple[str, str], ...] = ()
    timestamp: str = ""  # ISO 8601, UTC, to the second, no zone (``now``)
    seconds: float = 0.0

    def count(self, outcome: str) -> int:
        return sum(c.outcome == outcome for c in self.cases)


def suite_version() -> str:
    """The installed version of acp-sysprompt (``unknown`` where it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


def suite_properties(
    revision: str, command: Sequence[str], *more: tuple[str, str]
) -> tuple[tuple[str, str], ...]:
    """The properties of every suite: the suite's version, the revision judged, the command
    line (its words joined as a shell would read them), then ``more``."""
    import shlex

    return (
        ("acp-sysprompt.version", suite_version()),
        ("acp-sysprompt.revision", revision),
        ("acp-sysprompt.command", shlex.join(command)),
        *more,
    )


def now() -> str:
    """This moment as a suite's ``timestamp``: UTC, to the second, no zone."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def xml_text(text: object, limit: int = TEXT_CHARS) -> str:
    """``text`` as XML 1.0 may hold it: each forbidden character escaped, clipped to
    ``limit`` characters (the cut said)."""
    s = _FORBIDDEN.sub(_escape, str(text))
    if len(s) > limit:
        s = s[: max(0, limit - 40)] + f" … [{len(s) - limit + 40:,} characters cut]"
    return s


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _line(text: str) -> str:
    """A message attribute: one line, clipped."""
    return xml_text(" ".join(text.split()), MESSAGE_CHARS)


def _seconds(value: float) -> str:
    return f"{max(0.0, value):.3f}"


def _case(case: Case) -> ET.Element:
    e = ET.Element("testcase", {"name": _line(case.name), "classname": _line(case.classname)})
    if case.seconds is not None:
        e.set("time", _seconds(case.seconds))
    if case.outcome != PASSED:
        tag = {FAILED: "failure", ERROR: "error", SKIPPED: "skipped"}[case.outcome]
        child = ET.SubElement(e, tag, {"message": _line(case.message or case.outcome)})
        if case.kind:
            child.set("type", _line(case.kind))
        body = case.text
        if case.reproduce:
            body = (body + "\n\n" if body else "") + f"reproduce: {case.reproduce}"
        if body:
            child.text = xml_text(body)
    if case.output:
        ET.SubElement(e, "system-out").text = xml_text(case.output)
    return e


def document(suites: Iterable[Suite], name: str) -> ET.Element:
    """The ``testsuites`` element of ``suites``: each suite's counts from its cases, the whole
    file's from all of them."""
    root = ET.Element("testsuites", {"name": _line(name)})
    totals = dict.fromkeys(OUTCOMES, 0)
    seconds = 0.0
    for n, suite in enumerate(suites):
        attrs = {
            "name": _line(suite.name),
            "tests": str(len(suite.cases)),
            "failures": str(suite.count(FAILED)),
            "errors": str(suite.count(ERROR)),
            "skipped": str(suite.count(SKIPPED)),
            "time": _seconds(suite.seconds),
            "id": str(n),
        }
        if suite.timestamp:
            attrs["timestamp"] = suite.timestamp
        s = ET.SubElement(root, "testsuite", attrs)
        if suite.properties:
            props = ET.SubElement(s, "properties")
            for key, value in suite.properties:
                ET.SubElement(props, "property", {"name": _line(key), "value": _line(value)})
        for case in suite.cases:
            s.append(_case(case))
        for outcome in OUTCOMES:
            totals[outcome] += suite.count(outcome)
        seconds += suite.seconds
    root.set("tests", str(sum(totals.values())))
    root.set("failures", str(totals[FAILED]))
    root.set("errors", str(totals[ERROR]))
    root.set("time", _seconds(seconds))
    return root


def to_xml(suites: Iterable[Suite], name: str) -> bytes:
    """The JUnit XML file's bytes: UTF-8, with its declaration."""
    root = document(suites, name)
    ET.indent(root, space=" ")
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def write(path: Path, suites: Iterable[Suite], name: str) -> None:
    """The file written whole (made in memory first), its missing folders made as ``--out``
    makes its own; an OSError is the caller's to say."""
    data = to_xml(suites, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def check_target(path: Path | str, name: str = "--junit") -> None:
    """Before a run: ``path`` can be written — it is no folder, and its folder is one or can
    be made (its nearest existing ancestor is a folder a file can be made in), as ``--out``'s
    is — else a UsageError naming the argument ``name``, one line. Nothing is left behind
    (a file this made is removed again, no folder is made)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"argument {name}: {str(p)!r} is a directory")
    there = p.parent
    while not there.exists() and there != there.parent:
        there = there.parent
    if not there.is_dir():
        raise UsageError(f"argument {name}: {str(there)!r} is not a directory")
    probe = p if there == p.parent else there / f".acp-sysprompt-junit-{os.getpid()}"
    existed = probe.exists()
    try:
        with open(probe, "a", encoding="utf-8"):
            pass
    except OSError as e:
        raise UsageError(f"argument {name}: cannot write {str(probe)!r}: {e.strerror}") from None
    if not existed:
        probe.unlink(missing_ok=True)


def write_or_say(path: Path | str | None, suites: Iterable[Suite], name: str) -> str | None:
    """``write``, for a command after its verdict: None once written (or nothing asked), else
    the one line that says the file could not be (the command prints it and exits 2)."""
    if path is None:
        return None
    try:
        write(Path(path), suites, name)
    except OSError as e:
        where = e.filename or path
        return f"argument --junit: cannot write {str(where)!r}: {e.strerror or e}"
    return None


def cut_short(classname: str, message: str, text: str = "") -> Case:
    """The ``INCOMPLETE`` case of a run cut short: an error, so a CI reading the file never
    takes the tests that did not run for passes."""
    return Case(INCOMPLETE, classname, ERROR, message, text, kind=INCOMPLETE)
