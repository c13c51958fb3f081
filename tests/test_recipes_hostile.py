"""Hostile agent recipes, a hostile standard output and JSON files that name a key twice: one
line, exit 2, never a traceback (``simulations.live.recipes.recipes``, ``model.files``).

* an ``[env]`` key is a variable name or the recipe is refused, and the variables reach the
  agent as its process environment, never as arguments of ``env(1)`` (``--split-string`` ran a
  shell command, ``--chdir`` moved the agent out of its fresh cwd);
* a ``[files]`` path is relative, normalised, inside the home, without a NUL, with parts of at
  most 255 bytes, and no file is another's folder — checked when the recipe is read, not when
  the first test writes it (that was ``VERDICT: CONFORMANT`` over 0 tests, then exit 3);
* a recipe is read as a profile is: a regular file (a FIFO or ``/dev/zero`` refused), at most
  ``MAX_BYTES``, nested at most ``MAX_DEPTH`` deep; and every value an error repeats is clipped;
* a standard output that refuses writes (``/dev/full``) is exit 2, as ``explore --out`` naming
  a file that is not a directory;
* a JSON profile that names a key twice is refused, the key named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from model.files import MAX_BYTES, InputError, parse_json
from simulations.live.recipes.recipes import LAUNCHER, RecipeError, load_recipe

ROOT = Path(__file__).resolve().parent.parent
COMMAND = '["true", "{endpoint}"]'  # names the endpoint: conform would run it
BASE = f'name = "x"\napi = "chat"\ncommand = {COMMAND}\n'
FULL = Path("/dev/full")


def _cli(args: list[str], stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulations", *args],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,  # liveness only: a FIFO or /dev/zero must not hang it
        check=False,
    )


def _one_line(proc: subprocess.CompletedProcess[str], *named: str) -> str:
    """The run's stderr, once it is exit 2 with one error line naming each of ``named``."""
    err = proc.stderr
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("acp-sysprompt: error: "), err[-2000:]
    for word in named:
        assert word in lines[0], lines[0]
    return lines[0]


def _recipe(tmp_path: Path, text: str, name: str = "r.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _conform(recipe: Path | str, *rest: str) -> subprocess.CompletedProcess[str]:
    return _cli(["conform", "--recipe", str(recipe), "--timeout", "5", *rest])


# ---- [env]: names only, through the process environment -----------------------------------

BAD_NAMES = ["--split-string", "--chdir", "-i", "-u", "1A", "A-B", "A B", "", "A\nB", "Ä"]


@pytest.mark.parametrize("key", BAD_NAMES, ids=repr)
def test_an_env_key_that_is_no_variable_name_is_refused(tmp_path: Path, key: str) -> None:
    marker = tmp_path / "ran"
    path = _recipe(tmp_path, BASE + f'[env]\n{json.dumps(key)} = "touch {marker}"\n')
    with pytest.raises(RecipeError) as e:
        load_recipe(str(path))
    assert "env: " in str(e.value) and "not a variable name" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("key", ["--split-string", "--chdir", "-i"])
def test_an_option_as_an_env_key_is_exit_2_and_runs_nothing(tmp_path: Path, key: str) -> None:
    marker = tmp_path / "ran"
    value = f"sh -c 'touch {marker}'" if key != "--chdir" else "/"
    path = _recipe(tmp_path, BASE + f"[env]\n{json.dumps(key)} = {json.dumps(value)}\n")
    _one_line(_conform(path), "env:", "not a variable name")
    assert not marker.exists()


def test_the_environment_reaches_the_agent_as_its_environment(tmp_path: Path) -> None:
    """Values that ``env(1)`` would take for options or assignments are values; the command
    runs in the caller's cwd, ``{prefix}`` filled in, a command word with ``=`` a word."""
    out = tmp_path / "seen"
    script = 'printf "%s|%s|%s|%s" "$A" "$B" "$C" "$PWD" > "$0"'
    path = _recipe(
        tmp_path,
        'name = "x"\napi = "chat"\n'
        f"command = {json.dumps(['sh', '-c', script, str(out)])}\n"
        '[env]\nA = "--chdir=/"\nB = "-S touch x"\nC = "{prefix}/bin=1"\n',
    )
    argv = load_recipe(str(path)).argv("/opt/p")
    assert Path(argv[0]).name != "env" and "env" not in argv
    assert argv[argv.index("--") + 1 :] == ["sh", "-c", script, str(out)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == f"--chdir=/|-S touch x|/opt/p/bin=1|{tmp_path}"


def test_the_launcher_refuses_what_is_not_name_equals_value(tmp_path: Path) -> None:
    for words in (["--chdir=/", "--", "pwd"], ["1A=x", "--", "pwd"], ["A=1"], ["A=1", "--"]):
        done = subprocess.run(
            [sys.executable, "-I", "-S", LAUNCHER, *words],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and done.stdout == "", (words, done)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    missing = subprocess.run(
        [sys.executable, "-I", "-S", LAUNCHER, "A=1", "--", "no-such-agent-here"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 127
    assert missing.stderr.strip() == (
        "cannot start the agent 'no-such-agent-here': No such file or directory"
    )


def test_a_recipe_without_env_is_its_command(tmp_path: Path) -> None:
    assert load_recipe(str(_recipe(tmp_path, BASE))).argv("/p") == ["true", "{endpoint}"]


# ---- [files]: checked when the recipe is read ---------------------------------------------

BAD_FILES = {
    "empty": ('"" = "x"\n', "an empty path"),
    "dot": ('"." = "x"\n', "not a normalised path"),
    "dot-part": ('"a/./b" = "x"\n', "not a normalised path"),
    "up": ('".." = "x"\n', "not a normalised path"),
    "up-inside": ('"a/../../b" = "x"\n', "not a normalised path"),
    "double-slash": ('"a//b" = "x"\n', "not a normalised path"),
    "trailing-slash": ('"a/" = "x"\n', "not a normalised path"),
    "absolute": ('"/etc/x" = "x"\n', "an absolute path"),
    "absolute-double": ('"//etc/x" = "x"\n', "an absolute path"),
    "nul": ('"a\\u0000b" = "x"\n', "a NUL"),
    "long-part": (f'"{"n" * 300}" = "x"\n', "longer than 255 bytes"),
    "long-part-utf8": (f'"{"é" * 200}" = "x"\n', "longer than 255 bytes"),
    "long-path": (f'"{"/".join(["d" * 200] * 8)}" = "x"\n', "longer than 1024 bytes"),
    "file-and-folder": ('"a" = "x"\n"a/b" = "y"\n', "which is a file of the recipe too"),
    "folder-and-file": ('"c/d/e" = "y"\n"c/d" = "x"\n', "which is a file of the recipe too"),
}


@pytest.mark.parametrize("entry", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_files_entry_is_refused_when_read(tmp_path: Path, entry: tuple[str, str]) -> None:
    text, why = entry
    with pytest.raises(RecipeError) as e:
        load_recipe(str(_recipe(tmp_path, BASE + "[files]\n" + text)))
    assert "files: " in str(e.value) and why in str(e.value), str(e.value)
    assert "\n" not in str(e.value) and len(str(e.value)) < 400


@pytest.mark.parametrize("name", ["empty", "nul", "long-part", "file-and-folder", "dot"])
def test_a_bad_files_entry_is_exit_2_before_any_test(tmp_path: Path, name: str) -> None:
    text, why = BAD_FILES[name]
    proc = _conform(_recipe(tmp_path, BASE + "[files]\n" + text))
    _one_line(proc, "files:", why)
    assert "VERDICT" not in proc.stdout


def test_good_files_entries_are_written(tmp_path: Path) -> None:
    text = '"a/b/c.toml" = "x = 1"\n"a/b/d" = ""\n".hidden/e" = "{home}"\n"f...g" = "{endpoint}"\n'
    recipe = load_recipe(str(_recipe(tmp_path, BASE + "[files]\n" + text)))
    home = tmp_path / "home"
    recipe.write_files(home, "http://127.0.0.1:9")
    assert (home / "a/b/c.toml").read_text() == "x = 1"
    assert (home / ".hidden/e").read_text() == str(home)
    assert (home / "f...g").read_text() == "http://127.0.0.1:9"


# ---- reading: a regular file, bounded, not too deep ---------------------------------------


def test_a_deeply_nested_recipe_is_exit_2(tmp_path: Path) -> None:
    for depth in (40, 5000):
        path = _recipe(tmp_path, BASE.replace(COMMAND, "[" * depth + "]" * depth))
        with pytest.raises(RecipeError, match="nested too deeply"):
            load_recipe(str(path))
    _one_line(_conform(path), "nested too deeply")


def test_a_fifo_recipe_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "r.toml"
    os.mkfifo(fifo)
    _one_line(_conform(fifo), "not a regular file")
    _one_line(_cli(["conform-client", "--recipe", str(fifo)]), "not a regular file")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_recipe_that_is_dev_zero_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "zero.toml"
    link.symlink_to("/dev/zero")
    with pytest.raises(RecipeError, match="not a regular file"):
        load_recipe(str(link))
    _one_line(_conform(link), "not a regular file")


def test_a_folder_and_a_big_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "d.toml").mkdir()
    _one_line(_conform(tmp_path / "d.toml"), "not a regular file (a folder)")
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * MAX_BYTES + b"\n")
    _one_line(_conform(big), "larger than the limit")


# ---- every value an error repeats is clipped ----------------------------------------------

HUGE = "z" * 900_000  # under MAX_BYTES: the value itself, not the file's size, is refused


@pytest.mark.parametrize(
    "text",
    [
        f'name = "x"\napi = "{HUGE}"\ncommand = ["a"]\n',
        BASE + f'"{HUGE}" = 1\n',
        BASE + f'[env]\n"-{HUGE}" = "x"\n',
        BASE + f'[files]\n"/{HUGE}" = "x"\n',
        BASE.replace(COMMAND, f'["a\\u0000{HUGE}"]'),
    ],
    ids=["api", "unknown-key", "env-key", "files-path", "command-word"],
)
def test_an_error_repeats_a_huge_value_clipped(tmp_path: Path, text: str) -> None:
    path = _recipe(tmp_path, text)
    with pytest.raises(RecipeError) as e:
        load_recipe(str(path))
    assert len(str(e.value)) < 500 and "…" in str(e.value), len(str(e.value))
    line = _one_line(_conform(path))
    assert len(line) < 500


def test_an_odd_recipe_path_is_one_line_and_clipped(tmp_path: Path) -> None:
    odd = tmp_path / "a\nb.toml"
    with pytest.raises(RecipeError) as e:
        load_recipe(str(odd))
    assert "\n" not in str(e.value)
    spec = "y" * 100_000
    with pytest.raises(RecipeError) as e:
        load_recipe(spec)
    assert len(str(e.value)) < 500


# ---- a standard output that refuses writes, an --out that is no directory -----------------


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv", [["list"], ["check", "--bound", "tiny", "--quiet"]], ids=lambda a: a[0]
)
def test_a_full_standard_output_is_exit_2(argv: list[str]) -> None:
    with FULL.open("w") as full:
        proc = _cli(argv, stdout=full)
    assert _one_line(proc) == (
        "acp-sysprompt: error: cannot write to standard output: No space left on device"
    )


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_explore_out_naming_a_file_says_not_a_directory(tmp_path: Path) -> None:
    for out in (str(FULL), str(_recipe(tmp_path, "", "plain"))):
        line = _one_line(_cli(["explore", "--bound", "tiny", "--out", out]), "--out", out)
        assert "not a directory" in line and "File exists" not in line


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_conform_by_a_recipe_into_a_full_stdout(tmp_path: Path) -> None:
    """The reference agent by a recipe whose [env] carries its store, the endpoint's URL and
    values env(1) would take for options: it runs (so the environment reached it), the
    verdict cannot be printed: one line, exit 2, the JSON report still written."""
    script = 'exec "$PY" -m simulations.agent --revision v1-stable --model-api chat '
    script += '--store "$STORE" --model-endpoint "$URL"'
    recipe = _recipe(
        tmp_path,
        'name = "reference"\napi = "chat"\n'
        f"command = {json.dumps(['sh', '-c', script])}\n"
        f"[env]\nPY = {json.dumps(sys.executable)}\n"
        'STORE = "{home}/store"\nURL = "{endpoint}"\nODD = "--chdir=/"\n',
    )
    report = tmp_path / "report.json"
    with FULL.open("w") as full:
        argv = ["conform", "--recipe", str(recipe), "--timeout", "5", "--only"]
        proc = _cli([*argv, "ROW-new_session.9", "--report-json", str(report)], stdout=full)
    err = [x for x in proc.stderr.splitlines() if not x.startswith("acp-sysprompt: progress:")]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert err == [
        "acp-sysprompt: error: cannot write to standard output: No space left on device"
    ], proc.stderr[-3000:]
    data = json.loads(report.read_text())
    assert data["verdict"]["conformant"] is True, data["verdict"]
    assert data["model_endpoint"]["calls"] > 0  # the URL reached the agent through [env]


# ---- JSON that names a key twice ----------------------------------------------------------


def test_parse_json_refuses_a_duplicate_key_at_any_depth() -> None:
    assert parse_json('{"a": {"b": 1}, "c": [{"b": 2}, {"b": 3}]}', "f.json")["a"] == {"b": 1}
    for text, key in (('{"a": 1, "a": 2}', "'a'"), ('{"x": [{"b": 1, "b": 1}]}', "'b'")):
        with pytest.raises(InputError) as e:
            parse_json(text, "f.json")
        assert str(e.value) == f"f.json: duplicate key {key}"


def test_a_json_profile_with_a_duplicate_key_is_exit_2(tmp_path: Path) -> None:
    profile = tmp_path / "p.json"
    profile.write_text('{"name": "mine", "name": "theirs"}', encoding="utf-8")
    _one_line(_cli(["check", "--profile", str(profile), "--quiet"]), "duplicate key 'name'")
    long = tmp_path / "q.json"
    key = "k" * 100_000
    long.write_text(json.dumps({"name": "x"})[:-1] + f', "{key}": 1, "{key}": 2}}')
    line = _one_line(_cli(["check", "--profile", str(long), "--quiet"]), "duplicate key")
    assert len(line) < 500
