"""``conform-client`` against hostile clients: what a client does beyond the wire changes
neither the verdict nor the machine.

A client that daemonises with a clean environment leaves no process; one that rewrites what
it can find of the records, or plants a bad record there, is judged on what it sent; ``leaves``
names only what a client leaves in ``/tmp`` and never removes another job's file; a flood on
stderr is kept as a bounded tail, read through a pipe; the agent processes of a test and
their records are bounded together; a recipe that cannot be used (an ``[env]`` key that is no
variable name, a recipe nested too deeply) is one line, exit 2.

The hostile clients are one Python program (``HOSTILE``, run as ``python -c``, so it needs no
file the sandbox would have to show), each mode wrapping the repository's scripted client or
standing alone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from simulations import cli
from simulations.live.conform_client import conform as cc
from simulations.live.conform_client import recipe as client_recipe
from simulations.live.conform_client import run as client_run
from simulations.live.process import sandbox

HOSTILE = r'''
import json, os, shlex, signal, stat, subprocess, sys, time
from pathlib import Path

mode, args = sys.argv[1], sys.argv[2:]


def agent_command():
    return args[args.index("--agent") + 1] if "--agent" in args else ""


def record_files():
    """Every record file this client can find: the folder its agent command names, and
    whatever lies in the test's folder around its home and working directory."""
    words = shlex.split(agent_command())
    folders = {Path(words[i + 1]) for i, w in enumerate(words[:-1]) if w == "--log"}
    folders.add(Path.cwd().parent)
    found = set()
    for folder in folders:
        found.update(p for p in folder.rglob("*.ndjson") if p.is_file())
    return folders, found


def scripted():
    cmd = [sys.executable, "-m", "simulations.live.conform_client.scripted_client", *args]
    return subprocess.run(cmd, check=False).returncode


def daemon(token):
    """Double fork, setsid, an empty environment: a daemon that ignores SIGTERM, SIGHUP and
    SIGINT, carries ``token`` in its argv, and forks one more like itself now and then."""
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    code = (
        "import os, signal, time\n"
        "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        "for _ in range(5):\n"
        "    time.sleep(0.2)\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        break\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )
    os.execve(sys.executable, [sys.executable, "-I", "-S", "-c", code, token], {})


if mode == "daemon":  # daemon TOKEN: three daemons, then the step exits 0
    for _ in range(3):
        daemon(args[0])
    time.sleep(0.2)
    sys.exit(0)

if mode == "strip":  # the scripted client, then systemPrompt taken out of every record found
    code = scripted()
    for path in record_files()[1]:
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            params = (rec.get("message") or {}).get("params")
            if isinstance(params, dict):
                params.pop("systemPrompt", None)
            lines.append(json.dumps(rec))
        path.write_text("".join(l + "\n" for l in lines))
    sys.exit(code)

if mode == "bad-record":  # a record the tool cannot read, wherever records may be read from
    bad = {"direction": "send", "process": "x", "t": "soon", "message": {"jsonrpc": "2.0"}}
    for folder in record_files()[0]:
        try:  # in the sandbox the tool's folders are read-only to it: planted where it can
            (folder / "process-99.ndjson").write_text(json.dumps(bad) + "\n")
        except OSError:
            pass
    sys.exit(scripted())

if mode == "many":  # many N: N agent processes, each fed one initialize, then the scripted client
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    for _ in range(int(args[0])):
        subprocess.run(
            shlex.split(agent_command()),
            input=(json.dumps(init) + "\n").encode(),
            stdout=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    args = args[1:]
    sys.exit(scripted())

if mode == "flood":  # stderr: a flood from a child that outlives the step, then what it is
    kind = "a regular file" if stat.S_ISREG(os.fstat(2).st_mode) else "no regular file"
    writer = (
        "import os, sys\n"
        "chunk = b'x' * 65536\n"
        "for _ in range(1024):\n"  # 64 MiB
        "    os.write(2, chunk)\n"
        f"os.write(2, b'\\nEND stderr is {kind}\\n')\n"
    )
    sys.exit(subprocess.run([sys.executable, "-I", "-S", "-c", writer], check=False).returncode)

sys.exit(f"hostile: unknown mode {mode}")
'''


def hostile(mode: str, *words: str) -> tuple[str, ...]:
    return (sys.executable, "-c", HOSTILE, mode, *words)


def wrapped(mode: str, build: str, *extra: str) -> client_recipe.ClientRecipe:
    """The scripted recipe as ``build``, each step run by the hostile client's ``mode``."""
    base = cc.scripted_recipe(build)
    prefix = ("{python}", "-m", "simulations.live.conform_client.scripted_client")
    steps = {}
    for name, words in base.steps.items():
        assert words[:3] == prefix
        steps[name] = hostile(mode, *extra, *words[3:])
    return replace(base, name=f"{mode} ({build})", steps=steps)


@pytest.fixture(params=["sandbox", "no-sandbox"])
def offline(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test as root with the sandbox, and as a run without it (the tool alone)."""
    if request.param == "sandbox":
        if not sandbox.available():
            pytest.skip(f"no sandbox here: {sandbox.note()}")
    else:
        monkeypatch.setattr(sandbox, "available", lambda: False)
    return str(request.param)


def _with_token(token: str) -> list[int]:
    """Live processes carrying ``token`` in their argv."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            state = (d / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in argv and state != b"Z":
            out.append(int(d.name))
    return out


@pytest.fixture
def token() -> Iterator[str]:
    """A unique argv word; whatever carries it after the test is killed (a failing test
    leaves nothing running either)."""
    word = f"acp-hostile-{uuid.uuid4().hex}"
    yield word
    for pid in _with_token(word):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# ---- processes -------------------------------------------------------------------------------


def test_a_daemon_with_a_clean_environment_is_stopped_with_the_test(
    tmp_root: Path, offline: str, token: str
) -> None:
    """setsid, a double fork, ``env -i``, SIGTERM ignored, and children of its own: nothing
    of it outlives the test (today's environment mark missed every one: 6 were left)."""
    step = hostile("daemon", token)
    recipe = client_recipe.ClientRecipe("daemons", {"new": step, "turn": step}, {"append": ("x",)})
    report = cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
    first = report.results[0]
    assert first.steps[0][0] == "new" and {s for s, _, _, _ in first.steps} >= {"new", "turn"}
    assert {c for _, _, c, _ in first.steps} == {0}, first.steps
    assert _with_token(token) == []
    assert list(tmp_root.iterdir()) == []


# ---- records out of the client's reach -------------------------------------------------------


def test_a_client_that_rewrites_the_records_is_judged_on_what_it_sent(
    tmp_root: Path, offline: str
) -> None:
    """The faulty build that sends systemPrompt unadvertised, then strips it from every
    record file it can find: still NOT CONFORMANT (T2) (today: CONFORMANT, the tee's folder
    named in its agent command)."""
    # the plan's first scenario (budget): the one that convicts this build
    recipe = wrapped("strip", "sends-unadvertised")
    report = cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
    assert report.status("T2") == client_run.FAIL, report.render()
    assert report.verdict.startswith("NOT CONFORMANT (T2")


def test_a_bad_record_planted_by_the_client_is_no_fault_of_the_tool(
    tmp_root: Path, offline: str
) -> None:
    """``"t": "soon"`` and ``"process": "x"`` in a record file: the tool judges what it
    recorded itself and never blames itself (today: exit 3)."""
    report = cc.conform_client(wrapped("bad-record", "conforming"), Path("."), only=["S5"])
    assert report.internal_error is None, report.internal_error
    assert report.exit_code == 0, report.render()


def test_the_tees_reader_counts_a_bad_record_as_unread(tmp_path: Path) -> None:
    """A hand-made record folder (``simulations.live.process.tee``) with records that are no
    records: counted as unread, never an exception; the good ones merged by time."""
    from simulations.live.process.tee import read_records

    good = '{"direction": "send", "process": 0, "t": 1.0, "message": {"jsonrpc": "2.0"}}\n'
    later = '{"direction": "recv", "process": 1, "t": 2.0, "message": {"jsonrpc": "2.0"}}\n'
    (tmp_path / "process-0.ndjson").write_text(
        good
        + '{"direction": "send", "process": "x", "t": "soon", "message": {}}\n'
        + '{"direction": "send", "process": 0, "t": NaN, "message": {}}\n'
        + "[1, 2]\nnot json\n"
    )
    (tmp_path / "process-1.ndjson").write_text(later)
    records, unread = read_records(tmp_path)
    assert [r["t"] for r in records] == [1.0, 2.0] and unread == 4


def test_the_tees_reader_caps_the_records_over_all_processes(tmp_path: Path) -> None:
    """One cap over every process file of a folder, read lazily and merged by time."""
    from simulations.live.process.tee import read_records

    for n in range(20):
        lines = [
            f'{{"direction": "send", "process": {n}, "t": {k * 20 + n}, "message": {{}}}}\n'
            for k in range(50)
        ]
        (tmp_path / f"process-{n}.ndjson").write_text("".join(lines))
    records, unread = read_records(tmp_path, limit=30)
    assert [r["t"] for r in records] == list(range(30)) and unread == 20 * 50 - 30


def test_the_agent_processes_of_a_test_are_capped_and_said(
    tmp_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that starts more agent processes than a test allows: the ones past the cap
    are refused, the test names it, and the records stay within one budget."""
    from simulations.live.process import recorder

    monkeypatch.setattr(recorder, "MAX_PROCESSES", 4)
    monkeypatch.setattr(recorder, "RECORDS_KEPT", 5)
    recipe = wrapped("many", "conforming", "6")
    report = cc.conform_client(recipe, Path("."), only=["S5"], budget=1)
    first = report.results[0]
    assert any("more than 4 agent processes" in f for f in first.findings), first.findings
    assert {r["process"] for r in first.records} <= set(range(4))
    # one budget over every process of the test: 4 processes, 5 records, the rest counted
    assert len(first.records) == 5 and first.unread > 0
    assert all("not judged" in o.message for o in first.outcomes)


# ---- what a client leaves ------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["/etc/*", "/tmp/*", "/home/*", "/tmp/a*", "/var/tmp/x-*"])
def test_a_leaves_pattern_outside_the_tests_own_tmp_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pattern: str
) -> None:
    path = tmp_path / "client.toml"
    path.write_text(
        f'name = "x"\nleaves = ["{pattern}"]\n[steps]\nnew = ["a"]\nturn = ["a"]\n'
        '[prompt]\nappend = ["b"]\n'
    )
    assert cli.main(["conform-client", "--recipe", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "leaves" in err and "Traceback" not in err, err


def test_another_jobs_file_under_the_pattern_survives(
    tmp_root: Path, offline: str, token: str
) -> None:
    """A file another job makes under a ``leaves`` pattern while a test runs is never the
    test's to remove (today: removed)."""
    stem = f"/tmp/{token}"
    other = Path(f"{stem}-other")
    # the step outlives the other job's poll (every 0.05 s) by far; in the sandbox its sleep
    # is not the process the other job kills, and the test waits it out: 20 s, not a minute
    step = ("sh", "-c", f"touch {stem}-mine; sleep 20", token)
    recipe = client_recipe.ClientRecipe(
        "leaves", {"new": step, "turn": ("true",)}, {"append": ("x",)}, leaves=(f"{stem}-*",)
    )
    seen = threading.Event()

    def another_job() -> None:  # once the step runs: a file of its own, then the step ended
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pids = _with_token(token)
            if pids:
                other.write_text("another job's\n")
                seen.set()
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):  # it may have ended by now
                        os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    job = threading.Thread(target=another_job)
    job.start()
    try:
        cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
        job.join()
        assert seen.is_set()
        assert other.read_text() == "another job's\n"
    finally:
        for p in Path("/tmp").glob(f"{token}-*"):
            p.unlink()


# ---- stderr ---------------------------------------------------------------------------------


def test_a_flood_on_stderr_is_kept_as_a_bounded_tail(tmp_root: Path) -> None:
    """64 MiB on stderr (from a child of the step): a tail of at most client_run.TAIL_BYTES is kept,
    its end the step's last words, and the step's stderr is a pipe (today: a temporary file
    that took all of it, read whole)."""
    step = hostile("flood")
    recipe = client_recipe.ClientRecipe(
        "flood", {"new": step, "turn": ("true",)}, {"append": ("x",)}
    )
    report = cc.conform_client(recipe, Path("."), only=["T2"], budget=1)
    name, _, code, tail = report.results[0].steps[0]
    assert (name, code) == ("new", 0)
    assert len(tail.encode()) <= 2000 and tail.rstrip().endswith("END stderr is no regular file")


# ---- recipes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[env]\n"A=B" = "x"\n', "env"),
        ('[env]\n"1A" = "x"\n', "env"),
        ('[env]\n"" = "x"\n', "env"),
        ('[env]\nA = "x\\u0000y"\n', "env"),
        ("x = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
        ("[" + ".".join(["a"] * 100) + "]\n", "nested too deeply"),
        ("leaves = [" + ", ".join(['"/tmp/acpx-' + "x" * 5000 + '"'] * 3) + "]\n", "leaves"),
    ],
)
def test_a_recipe_that_cannot_be_used_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    path = tmp_path / "client.toml"
    path.write_text(
        'name = "x"\n' + text + '[steps]\nnew = ["a"]\nturn = ["a"]\n[prompt]\nappend = ["b"]\n'
        if not text.startswith("[")
        else 'name = "x"\n[steps]\nnew = ["a"]\nturn = ["a"]\n[prompt]\nappend = ["b"]\n' + text
    )
    code = cli.main(["conform-client", "--recipe", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and named in err, err
    assert "Traceback" not in err and len(err) < 600, err
