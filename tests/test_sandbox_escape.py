"""The sandbox against programs that try to leave it (``simulations.live.process.sandbox``).

Each hostile program (``tests/fixtures/escaping``) runs with the project's Python under
``sandbox.wrap``, with a real relay where one is needed, and says what each attempt did; the
test judges that and what the host shows afterwards. The red team's ways out: ``setns(2)`` into
a host process's namespaces (then the host's loopback, a mount on the host), a host Unix socket
(under ``/tmp``, ``/run``, an abstract one), a write outside the folders the program was given
(the project, ``/etc``, the host's ``/tmp`` and ``$HOME``), a daemon left behind by an agent
that SIGKILLs its supervisor, or when the tool kills the supervisor or the wrapper itself.
And the normal path: the reference agent answers ``initialize``, the agent's exit status and
signals pass through, an agent that closes stdout is seen to.

Each runs as root (the program as the sandbox's own uid) and in a user namespace (the mode
without root; as root too, to test it here); what needs root skips elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from simulations.live.process import sandbox, sandbox_setup
from simulations.live.process.transport import AgentFailure, LiveAgent

ROOT = Path(__file__).resolve().parent.parent
ESCAPING = ROOT / "tests" / "fixtures" / "escaping"
PY = sys.executable
ROOTED = os.geteuid() == 0

as_root = pytest.mark.skipif(
    not (ROOTED and sandbox.available()), reason="needs root and a sandbox (unshare, Linux 5.12+)"
)
in_userns = pytest.mark.skipif(
    sys.platform != "linux" or bool(sandbox._probe(True)),
    reason="no unprivileged user namespace here",
)
MODES = [
    pytest.param(False, id="as-root", marks=as_root),
    pytest.param(True, id="user-namespace", marks=in_userns),
]


def _cmdline_has(marker: str) -> list[int]:
    """Live processes whose argv holds ``marker`` (from /proc, zombies left out)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if marker.encode() not in (d / "cmdline").read_bytes():
                continue
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.append(int(d.name))
    return out


def _gone(marker: str, wait: float) -> bool:
    deadline = time.monotonic() + wait
    while _cmdline_has(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique word for the argv of a test's processes; any left at the end are killed."""
    word = f"acp-escape-{uuid.uuid4().hex}"
    yield word
    for pid in _cmdline_has(word):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _run(
    script: str,
    *args: str,
    userns: bool,
    writable: Sequence[str] = (),
    readable: Sequence[str] = (),
    port: int = 0,
    socket_path: str = "",
    cwd: str = "/",
) -> dict[str, str]:
    """Run a hostile program in the sandbox; what it said, attempt → outcome."""
    argv = [PY, str(ESCAPING / script), *args]
    wrapped = sandbox.wrap(
        argv, port, socket_path, writable=writable, readable=readable, userns=userns
    )
    done = subprocess.run(wrapped, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr
    seen: dict[str, str] = {}
    for line in done.stdout.splitlines():
        seen.update(json.loads(line))
    return seen


def _listener() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    return s


def _accepted(server: socket.socket) -> bool:
    """Whether anything connected to ``server`` (a non-blocking listener)."""
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _umount(path: Path) -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).umount2(str(path).encode(), 2)  # MNT_DETACH


# ---- (a) setns into the host's namespaces ------------------------------------------------------


@pytest.mark.parametrize("userns", MODES)
def test_setns_into_a_host_process_namespace_is_refused(tmp_path: Path, userns: bool) -> None:
    """The red team's escape: the agent opened ``/proc/<pid>/ns/net`` of a host process and
    ``setns``'d into it, then reached a listener on the host's loopback. Now the program has
    no capability over the host's namespaces (and no host process in its /proc): setns into
    the test's own network and mount namespaces fails, the host listener sees no connection,
    no mount lands on the host; namespaces of its own (``unshare``) change nothing of it."""
    host = _listener()
    where = tmp_path / "mnt"
    where.mkdir()
    (where / "kept").write_text("the host's\n")
    try:
        seen = _run(
            "setns_escape.py",
            str(os.getpid()),
            str(host.getsockname()[1]),
            str(where),
            userns=userns,
            readable=[str(where)],
        )
        assert seen["setns net"] != "ok", seen
        assert seen["host loopback"] != "ok", seen
        assert seen["setns mnt"] != "ok", seen
        assert seen["mount on the host"] != "ok", seen
        assert "unshare" in seen and "mount of its own" in seen, seen
        assert not _accepted(host)
        assert not os.path.ismount(where) and (where / "kept").read_text() == "the host's\n"
    finally:
        host.close()
        while os.path.ismount(where):  # the escape worked: undo its mount
            _umount(where)


# ---- (b) nothing reachable but the relay -------------------------------------------------------


class _Echo:
    """A Unix socket server (the relay's far end) that echoes one line per connection."""

    def __init__(self, path: str) -> None:
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.server.accept()
                with conn:
                    conn.sendall(conn.recv(64))


def _unix_listener(path: str, abstract: bool = False) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + path if abstract else path)
    if not abstract:
        os.chmod(path, 0o777)  # anyone may connect: only the sandbox keeps it out of reach
    s.listen(8)
    s.setblocking(False)
    return s


@pytest.mark.parametrize("userns", MODES)
def test_only_the_relayed_port_answers(userns: bool) -> None:
    """No TCP connection to the host (a listener on its 127.0.0.1 is unreachable), none to a
    host Unix socket (in ``/tmp``, in ``/run``, abstract) even one anyone may connect to; the
    relayed port reaches the Unix socket it was given."""
    word = uuid.uuid4().hex[:12]
    folder = tempfile.mkdtemp(prefix="acp-escape-", dir="/tmp")
    os.chmod(folder, 0o755)
    relay_end = os.path.join(folder, "relay.sock")
    in_tmp = os.path.join(folder, "host.sock")
    in_run = f"/run/acp-escape-{word}.sock"
    _Echo(relay_end)
    host = _listener()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        relay_port = probe.getsockname()[1]
    listeners = [_unix_listener(in_tmp), _unix_listener(f"acp-escape-{word}", abstract=True)]
    if os.path.isdir("/run") and os.access("/run", os.W_OK):
        listeners.append(_unix_listener(in_run))
    paths = [in_tmp, f"@acp-escape-{word}", *([in_run] if len(listeners) == 3 else [])]
    try:
        seen = _run(
            "reach.py",
            str(host.getsockname()[1]),
            str(relay_port),
            *paths,
            userns=userns,
            port=relay_port,
            socket_path=relay_end,
        )
        assert seen["relay"] == "ok", seen
        assert seen["host tcp"] != "ok", seen
        for p in paths:
            assert seen[p] != "ok", (p, seen)
        assert not _accepted(host)
        assert not any(_accepted(s) for s in listeners)
    finally:
        for s in (host, *listeners):
            s.close()
        with contextlib.suppress(OSError):
            os.unlink(in_run)
        subprocess.run(["rm", "-rf", folder], check=False)


# ---- (c) writes outside its folders ------------------------------------------------------------


@pytest.mark.parametrize("userns", MODES)
def test_nothing_outside_its_folders_is_writable(tmp_path: Path, userns: bool) -> None:
    """The program writes its home, its cwd and its private /tmp, and nothing else: not the
    project, ``/etc``, the host's ``/tmp`` or ``$HOME``, nor the folder holding its own. What
    it wrote stays the tool's (idmapped, nothing chowned): read and removed as before."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    for d in (home, cwd):
        d.mkdir()
    name = f"acp-escape-{uuid.uuid4().hex}"
    host_home = os.path.expanduser("~")
    host = [str(ROOT), "/etc", host_home, str(tmp_path)]
    own = [str(home), str(cwd), "/tmp"]
    try:
        seen = _run(
            "write_probe.py",
            name,
            *host,
            *own,
            userns=userns,
            writable=[str(home), str(cwd)],
            cwd=str(cwd),
        )
        for d in host:  # refused; or, in the user namespace, in its own /tmp (the folders
            # on the way to its home are made there, its uid's) and not on the host
            assert seen[d] != "ok" or (userns and d == str(tmp_path)), (d, seen)
            assert not Path(d, name).exists(), d
        for d in own:
            assert seen[d] == "ok", (d, seen)
        assert not Path("/tmp", name).exists()  # its /tmp was its own
        for d in (home, cwd):
            assert (d / name).read_text() == "escaped\n"
            assert (d / name).stat().st_uid == d.stat().st_uid == os.getuid()
    finally:
        for d in (*host, "/tmp"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(d, name))


@as_root
def test_a_program_it_cannot_read_is_named_in_one_line(tmp_path: Path) -> None:
    """As root the program runs as the sandbox's uid, which reads what any user may: a script
    that only root may read is refused before it starts, in one line naming it."""
    script = tmp_path / "secret.py"
    script.write_text("print('ran')\n")
    script.chmod(0o600)
    argv = sandbox.wrap([PY, str(script)], 0, "", writable=[], readable=[str(script)])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 126 and "ran" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sandbox: "), done.stderr
    assert (
        f"{script} is not readable by the sandbox's user (uid {sandbox_setup.AGENT_UID})"
        in lines[0]
    )


# ---- (d) daemons: nothing outlives the sandbox -------------------------------------------------


def _daemon_argv(marker: str, cwd: Path, *, stay: bool, userns: bool | None = None) -> list[str]:
    argv = [PY, str(ESCAPING / "daemon_and_kill.py"), marker, *(["stay"] if stay else [])]
    return sandbox.wrap(argv, 0, "", writable=[str(cwd)], userns=userns)


async def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("userns", MODES)
def test_an_agent_that_kills_its_supervisor_leaves_no_process(
    tmp_path: Path, marker: str, userns: bool
) -> None:
    """The red team's agent left a daemon (setsid, a double fork, an empty environment) and
    SIGKILLed its supervisor; the daemon ran on, re-parented to init. Now the supervisor is
    out of its sight (its own PID namespace) and not its to signal (another uid): every kill
    fails, and once LiveAgent stops, none of its processes is left."""

    async def main() -> str:
        agent = LiveAgent(_daemon_argv(marker, tmp_path, stay=False, userns=userns), timeout=5)
        agent.cwd = str(tmp_path)
        await agent.start()
        try:
            (tmp_path / "supervisor.pid").write_text(str(agent.pids[0]))
            await _wait_for(tmp_path / "done")
            assert len(_cmdline_has(marker)) >= 2  # the agent and its daemon
        finally:
            await agent.stop()
        return agent.stderr_text()

    said = asyncio.run(main())
    assert "kill " in said and "killed" not in said, said
    assert _gone(marker, 2.0), _cmdline_has(marker)


def test_the_kernel_ends_the_sandbox_when_its_supervisor_is_killed(
    tmp_path: Path, marker: str
) -> None:
    """When the tool SIGKILLs the supervisor (nothing of its ladder runs), the wrapper goes
    with it, pid 1 with the wrapper, and with pid 1 the kernel ends every process of the
    namespace: the daemon too."""
    if not sandbox.available():
        pytest.skip("no sandbox here")

    async def main() -> None:
        agent = LiveAgent(_daemon_argv(marker, tmp_path, stay=True), timeout=5)
        agent.cwd = str(tmp_path)
        await agent.start()
        try:
            await _wait_for(tmp_path / "done")
            assert len(_cmdline_has(marker)) >= 2
            os.kill(agent.pids[0], signal.SIGKILL)
            deadline = time.monotonic() + 5
            while _cmdline_has(marker) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert not _cmdline_has(marker), "a process outlived its supervisor"
        finally:
            await agent.stop()

    asyncio.run(main())


@pytest.mark.parametrize("userns", MODES)
def test_the_kernel_ends_the_sandbox_when_the_wrapper_is_killed(
    tmp_path: Path, marker: str, userns: bool
) -> None:
    """The wrapper alone (as conform-client runs each step), SIGKILLed: the same."""
    proc = subprocess.Popen(
        _daemon_argv(marker, tmp_path, stay=True, userns=userns),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        asyncio.run(_wait_for(tmp_path / "done"))
        assert len(_cmdline_has(marker)) >= 2
        proc.kill()
        proc.wait(timeout=10)
        assert _gone(marker, 5.0), _cmdline_has(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


# ---- (e) the normal path -----------------------------------------------------------------------


def _uids(pid: int) -> set[int]:
    """The real uids of ``pid``'s descendants (from /proc)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            if d.name.isdigit():
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier}
        found += frontier
    uids = set()
    for p in found:
        with contextlib.suppress(OSError, IndexError, ValueError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("Uid:"):
                    uids.add(int(line.split()[1]))
    return uids


@pytest.mark.parametrize("userns", MODES)
def test_the_reference_agent_answers_initialize_in_the_sandbox(
    tmp_path: Path, userns: bool
) -> None:
    """The reference agent (the project's Python, its venv; as root one the sandbox's uid
    cannot traverse on the way is covered, the path kept) starts under ``wrap`` as conform
    starts it, answers ``initialize``, and runs as the sandbox's user where root."""
    store = tmp_path / "store"
    store.mkdir()
    argv = [PY, "-m", "simulations.agent", "--revision", "v1-stable", "--store", str(store)]

    async def main() -> tuple[object, set[int]]:
        wrapped = sandbox.wrap(argv, 0, "", writable=[str(store)], userns=userns)
        agent = LiveAgent(wrapped, timeout=30, cwd=str(ROOT))
        await agent.start()
        try:
            answer = await agent.request("initialize", {"protocolVersion": 1})
            return answer.result, _uids(agent.pids[0])
        finally:
            await agent.stop()

    result, uids = asyncio.run(main())
    assert isinstance(result, dict) and result.get("protocolVersion") == 1, result
    if not userns:
        assert sandbox_setup.AGENT_UID in uids, uids


@pytest.mark.parametrize("userns", MODES)
def test_the_programs_exit_and_signals_pass_through(userns: bool) -> None:
    """SIGTERM to the wrapper reaches the program; its exit code is the wrapper's, and a
    program ended by a signal ends the wrapper by the same signal."""
    code = (
        "import signal, sys, time\n"
        "if sys.argv[1] == 'trap': signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    for how, expected in (("trap", 7), ("die", -signal.SIGTERM)):
        argv = sandbox.wrap([PY, "-c", code, how], 0, "", writable=[], userns=userns)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, cwd="/")
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == expected, how
        proc.stdout.close()


@pytest.mark.parametrize("userns", MODES)
def test_an_agent_that_closes_stdout_is_seen_to(userns: bool) -> None:
    """The wrapper and its pid 1 let go of stdin and stdout: an agent that closes its stdout
    while it runs is named at once, not waited for to the timeout."""
    code = "import os, time\nos.close(1)\ntime.sleep(30)\n"

    async def main() -> str:
        wrapped = sandbox.wrap([PY, "-c", code], 0, "", writable=[], userns=userns)
        agent = LiveAgent(wrapped, timeout=20, cwd="/")
        await agent.start()
        try:
            with pytest.raises(AgentFailure) as e:
                await agent.request("initialize", {"protocolVersion": 1})
            return str(e.value)
        finally:
            await agent.stop()

    assert "closed its stdout" in asyncio.run(main())


def test_the_note_says_what_the_sandbox_covers() -> None:
    """One line, what holds: as root its own uid without capabilities, and the network,
    mount and PID namespaces; where nothing can be made, "not sandboxed"."""
    line = sandbox.note()
    assert "\n" not in line
    if not sandbox.available():
        assert line.startswith("not sandboxed")
        return
    for part in ("network namespace", "loopback only", "no capabilities", "mount", "PID"):
        assert part in line, line
    if ROOTED:
        assert f"uid {sandbox_setup.AGENT_UID}" in line, line


@pytest.mark.parametrize("userns", MODES)
def test_the_note_names_the_host_sockets_out_of_reach_and_no_more(userns: bool) -> None:
    """Issue 57: the line claimed "no host Unix socket in reach" while a socket anyone may
    connect to, outside ``/tmp`` and ``/run``, answered from inside. It now names the folders
    hidden (/tmp, /run) and says one elsewhere is in reach where its mode lets the agent in:
    what a sandboxed child reaches agrees with it."""
    # outside /tmp and /run, on a path the sandbox's uid may walk (the checkout, not $HOME,
    # which is often 0700), removed at the end
    folder = tempfile.mkdtemp(prefix=".acp-escape-", dir=ROOT)
    os.chmod(folder, 0o755)
    elsewhere = os.path.join(folder, "host.sock")
    listener = _unix_listener(elsewhere)
    try:
        reached = _run("reach.py", "9", "9", elsewhere, userns=userns, cwd="/")[elsewhere]
    finally:
        listener.close()
        subprocess.run(["rm", "-rf", folder], check=False)
    line = sandbox._covers(userns)
    assert "no host Unix socket in reach" not in line, line
    assert "no host Unix socket under them in reach" in line and "/tmp and /run" in line, line
    if reached == "ok":  # what the line owns up to
        assert "one elsewhere is where its mode lets the agent's uid connect" in line, line
