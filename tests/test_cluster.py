"""``check --cluster``: the same answer spread over a Dask cluster (issue 42).

Each search on ``local:2`` runs in a process of its own (a local cluster spawns its workers,
which import the main module again: a pytest worker cannot be that module), through the
command line or ``tests/fixtures/cluster_run.py``. The comparisons have teeth: a spread search
that keeps the wrong BFS parent (``fault="greatest-key"``) has every count right and is caught
by its counterexamples.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from model.tables import REFERENCE
from simulations.engines import cluster
from simulations.engines.bounds import BOUNDS, bound_toml
from simulations.engines.explore import explore
from simulations.usage import UsageError

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "cluster_run.py"
needs_engine = pytest.mark.skipif(not cluster.available(), reason="the cluster extra is absent")


def _env() -> dict[str, str]:
    return {**os.environ, "ACP_SYSPROMPT_CACHE": "off", "PYTHONPATH": str(ROOT)}


def _cli(*args: str, blocked: bool = False) -> subprocess.CompletedProcess[str]:
    """``acp-sysprompt ARGS`` in a fresh process; ``blocked``: as if the extra were absent."""
    code = "import sys; from simulations.cli import main; sys.exit(main(sys.argv[1:]))"
    if blocked:  # an import of distributed fails, as where it is not installed
        code = "import sys; sys.modules['distributed'] = None; " + code
    return _python("-c", code, *args)


def _python(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=env or _env(),
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def _untimed(x: Any) -> Any:
    """A JSON answer without its clocks (the one thing a cluster may change)."""
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k not in ("clock", "seconds", "wall")}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def _spread(*args: str) -> dict[str, Any]:
    done = _python(str(RUN), *args)
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_without_the_extra_cluster_says_what_to_install_in_one_line() -> None:
    done = _cli("check", "--bound", "tiny", "--cluster", "local:2", blocked=True)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "acp-sysprompt: error: argument --cluster: the cluster engine is not installed: "
        "pip install 'acp-sysprompt-model[cluster]'"
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("local:0", "local:N needs N from 1 to 256"),
        ("local:two", "local:N needs N from 1 to 256"),
        ("", "expected local:N or a scheduler address"),
        ("host name", "expected local:N or a scheduler address"),
    ],
)
def test_a_malformed_cluster_is_one_line_naming_the_flag(given: str, said: str) -> None:
    with pytest.raises(UsageError, match=said) as e:
        cluster.parse(given)
    assert str(e.value).startswith("argument --cluster: ")


def test_a_scheduler_address_gets_its_scheme() -> None:
    assert cluster.parse("10.0.0.5:8786") == ("tcp://10.0.0.5:8786", 0)
    assert cluster.parse("local:3") == ("local", 3)


def test_worlds_cross_processes_whole_and_keep_their_owner() -> None:
    """``pack``/``unpack`` give back equal worlds, and a world's owner is the same in a process
    with another string-hash seed (``hash`` would not be)."""
    ex = explore(REFERENCE, "tiny")
    back = cluster.unpack(cluster.pack(ex.worlds), cluster.Interner())
    assert back == ex.worlds
    owners = [cluster.Interner().owner(w, 7) for w in ex.worlds]
    assert len(set(owners)) > 1
    code = (
        "import sys, json; from model.tables import REFERENCE; "
        "from simulations.engines.explore import explore; from simulations.engines import cluster; "
        "ex = explore(REFERENCE, 'tiny'); i = cluster.Interner(); "
        "print(json.dumps([i.owner(w, 7) for w in ex.worlds]))"
    )
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**_env(), "PYTHONHASHSEED": seed},
            check=True,
        )
        assert json.loads(done.stdout) == owners


@needs_engine
def test_population_on_choices_is_the_same_json_on_local_2() -> None:
    args = ("check", "--revision", "v1-stable", "--bound", "choices", "--json", "--quiet")
    here, spread = _cli(*args), _cli(*args, "--cluster", "local:2")
    assert here.returncode == spread.returncode == 0, spread.stderr[-2000:]
    a, b = json.loads(here.stdout), json.loads(spread.stdout)
    assert len(a["members"]) == 144 and a["searches"] == 2
    assert _untimed(a) == _untimed(b)


@needs_engine
def test_one_scope_of_small_spread_out_is_the_same_json(tmp_path: Path) -> None:
    small = BOUNDS["small"]
    one = replace(small, name="small-methods", scopes=(small.scopes[2],), envelope=())
    path = tmp_path / "one.toml"
    path.write_text(bound_toml(one), encoding="utf-8")
    args = ("check", "--bound", str(path), "--json", "--quiet")
    here, spread = _cli(*args), _cli(*args, "--cluster", "local:2")
    assert here.returncode == spread.returncode == 0, spread.stderr[-2000:]  # P ids only
    a, b = json.loads(here.stdout), json.loads(spread.stdout)
    assert a["budget"]["states"] == 3120 and a["counterexamples"]
    assert _untimed(a) == _untimed(b)


@needs_engine
def test_a_bound_of_several_scopes_is_a_task_per_scope_with_the_same_json() -> None:
    args = ("check", "--bound", "small", "--json", "--quiet")
    here, spread = _cli(*args), _cli(*args, "--cluster", "local:2")
    assert here.returncode == spread.returncode == 0, spread.stderr[-2000:]
    a, b = json.loads(here.stdout), json.loads(spread.stdout)
    assert a["budget"]["states"] == 5262 and len(a["budget"]["scopes"]) == 4
    assert _untimed(a) == _untimed(b)


@needs_engine
@pytest.mark.parametrize(("bound", "scope"), [("small", 0), ("choices", 1)])
def test_a_spread_search_keeping_the_wrong_parent_is_caught(bound: str, scope: int) -> None:
    """Every count is right, the counterexamples are not: what the comparisons above read."""
    right, wrong = _spread(bound, str(scope)), _spread(bound, str(scope), "--fault", "greatest-key")
    assert right["here"] == right["spread"]
    differs = [k for k in wrong["here"] if wrong["here"][k] != wrong["spread"][k]]
    assert differs == ["traces"]


@needs_engine
def test_a_worker_killed_mid_search_gives_the_same_answer() -> None:
    got = _spread("small", "2", "--kill-at", "4")
    assert got["killed"] and got["killed"][0] not in got["after"]  # it died; a new one came
    assert len(got["after"]) == 2
    assert got["here"] == got["spread"]
    assert got["spread"]["states"] == 3120 and got["spread"]["traces"]


@needs_engine
def test_a_frozen_worker_is_named_while_the_search_waits_and_the_answer_holds() -> None:
    """A worker stopped (SIGSTOP) mid-search: once nothing has finished for the silent
    deadline, the note names it — the search said nothing for minutes before — and, thawed,
    the answer is the same."""
    env = {**_env(), "ACP_SYSPROMPT_WORKER_SILENT": "2"}
    done = _python(str(RUN), "small", "2", "--freeze-at", "3", "--frozen-for", "8", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    silent = [n for n in got["notes"] if " silent for " in n]
    assert len(silent) == 1 and silent[0].startswith("worker tcp://"), got["notes"]
    assert got["here"] == got["spread"]


def test_a_bound_too_big_for_the_cluster_is_refused_with_the_number() -> None:
    heard: list[str] = []
    why = cluster.before_search(None, REFERENCE, BOUNDS["large"], True, 2, 64 << 20, heard.append)
    assert why is not None
    assert why.startswith("bound large: at least ~") and "more than the cluster's 64.0 MiB" in why
    assert heard and heard[0].startswith("cluster: 2 workers, 64.0 MiB between them; bound large")
    fits = cluster.before_search(None, REFERENCE, BOUNDS["large"], True, 2, 16 << 30, heard.append)
    assert fits is None


@needs_engine
def test_a_level_that_would_not_fit_stops_the_search_and_says_why() -> None:
    got = _spread("small", "2", "--budget", str(3200 * cluster.BYTES_PER_STATE))
    assert got["spread"]["complete"] is False
    assert 0 < got["spread"]["states"] < 3120
    assert got["notes"][-1].startswith("stopped before level ")
    assert "more than the cluster's" in got["notes"][-1]


@needs_engine
def test_no_scheduler_at_the_address_is_one_line_and_exit_2() -> None:
    done = _cli("check", "--bound", "tiny", "--quiet", "--cluster", "127.0.0.1:9")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        "acp-sysprompt: error: argument --cluster: no scheduler at tcp://127.0.0.1:9"
    )


@contextlib.contextmanager
def _listener(payload: bytes | None) -> Any:
    """A TCP listener on loopback that is no Dask scheduler: it accepts and sends ``payload``
    (None: never a byte); yields its address."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                held.append(conn)
                if payload is not None:
                    conn.sendall(payload)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in held:
            conn.close()


@needs_engine
@pytest.mark.parametrize(
    "payload",
    [
        None,  # accepts and never speaks: it hung for ever
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        (1).to_bytes(8, "little") + (1 << 62).to_bytes(8, "little"),  # a frame of 2^62 bytes
    ],
    ids=["silent", "ssh", "http", "huge-frame"],
)
def test_a_listener_that_is_no_scheduler_is_one_line_and_exit_2(payload: bytes | None) -> None:
    """Issue 57: the client's whole start is bounded; whatever is not a Dask scheduler is one
    line naming the flag and exit 2 (it was a hang, or exit 1 with a traceback)."""
    with _listener(payload) as address:
        done = _python(
            "-c",
            "import sys; from simulations.cli import main; sys.exit(main(sys.argv[1:]))",
            *("check", "--bound", "tiny", "--quiet", "--cluster", address),
            env={**_env(), cluster.TIMEOUT: "2"},
        )
    assert done.returncode == 2 and done.stdout == "", done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"acp-sysprompt: error: argument --cluster: no scheduler at tcp://{address}"
    )


@needs_engine
def test_ctrl_c_reaching_the_whole_group_keeps_the_partial_answer_and_leaves_no_process() -> None:
    """A terminal's Ctrl-C reaches the workers too: they leave it to the command, which stops
    the search, prints what it found (exit 130) and stops the cluster."""
    import signal
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from simulations.cli import main; sys.exit(main(sys.argv[1:]))",
            *("check", "--bound", "large", "--cluster", "local:2", "--json", "--progress"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    passed = False
    try:
        assert proc.stderr is not None
        seen = ""
        deadline = time.monotonic() + 300
        while "depth 5" not in seen and time.monotonic() < deadline:  # five levels done
            seen += proc.stderr.readline()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 130, (seen + err)[-2000:]
        data = json.loads(out)
        assert data["complete"] is False and data["budget"]["states"] >= 522
        left = "?"
        # the group empties (multiprocessing's tracker goes last): no worker stays
        for _ in range(50):
            time.sleep(0.2)
            found = subprocess.run(
                ["pgrep", "-g", str(proc.pid), "-a"], capture_output=True, text=True
            )
            left = found.stdout.strip()
            if not left:
                break
        assert left == ""
        passed = True
    finally:
        if not passed:  # a failed or hung run: nothing of it outlives the test
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)


@needs_engine
def test_sigterm_keeps_the_partial_answer_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """Issue 57: SIGTERM to the command (a CI job cancelled) stops the search as Ctrl-C does:
    the partial answer printed (exit 130), the local cluster stopped, its folder removed (it
    was left in TMPDIR) and no process of it left."""
    import signal
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from simulations.cli import main; sys.exit(main(sys.argv[1:]))",
            *("check", "--bound", "large", "--cluster", "local:2", "--json", "--progress"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(), "TMPDIR": str(tmp_path)},
        cwd=ROOT,
        start_new_session=True,
    )
    passed = False
    try:
        assert proc.stderr is not None
        seen = ""
        deadline = time.monotonic() + 300
        while "depth 3" not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()
        proc.send_signal(signal.SIGTERM)  # the command alone, not its group
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 130, (seen + err)[-2000:]
        assert json.loads(out)["complete"] is False
        left = "?"
        for _ in range(50):
            time.sleep(0.2)
            found = subprocess.run(
                ["pgrep", "-g", str(proc.pid), "-a"], capture_output=True, text=True
            )
            left = found.stdout.strip()
            if not left:
                break
        assert left == ""
        assert list(tmp_path.iterdir()) == []
        passed = True
    finally:
        if not passed:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)


@needs_engine
def test_a_local_cluster_leaves_nothing_in_the_temporary_folder(tmp_path: Path) -> None:
    """Dask's servers keep a work folder each (by default a shared ``dask-scratch-space`` in
    the temporary folder): a local cluster's is its own, and goes with it."""
    code = "import sys; from simulations.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ("check", "--bound", "tiny", "--cluster", "local:2", "--quiet")
    done = _python("-c", code, *argv, env={**_env(), "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "52 states" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_ctrl_c_lost_where_python_drops_it_is_raised_at_the_next_look() -> None:
    """Python drops an exception raised in a garbage-collection callback, and ``distributed``
    installs one: a Ctrl-C landing there would be lost and the search go on. While a cluster is
    attached the Ctrl-C is remembered too, and ``heard`` raises it where the search next looks
    (once); the handler is put back after."""
    import signal
    import time

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with cluster.listening():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except KeyboardInterrupt:
                pass  # dropped, as a gc callback's exception is
            with pytest.raises(KeyboardInterrupt):
                cluster.heard()
            cluster.heard()  # raised once: nothing more to say
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        cluster.heard()  # no cluster attached: nothing remembered
    finally:
        signal.signal(signal.SIGINT, before)
