"""Hostile input files and a hostile standard output (issue 25): one line, never a traceback.

Every file the command line reads besides logs (a profile, a client profile, an amendment,
a bound) is read at most ``model.files.MAX_BYTES`` (+1) bytes deep, decoded as UTF-8, parsed
and refused in one line naming the file when it is too big, not UTF-8, too deeply nested or
binary; a bound's counts have upper limits (``simulations.engines.bounds.LIMITS``); and a
standard output that refuses writes (``/dev/full``) is one line and exit 2.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import model.files
from simulations.cli import main
from simulations.engines.bounds import BOUNDS, LIMITS, BoundError, bound_toml, load_bound

# a valid file of each kind, and the command line that reads it
GOOD = {
    "profile": 'name = "agent"\nrevision = "rfd-final"\n',
    "client": 'name = "client"\nsends_prompt = "always"\n',
    "amend": 'name = "x"\nbase = "v1-stable"\n[must]\non_omit = "default"\n',
    "bound": bound_toml(BOUNDS["tiny"]),
}


def _argv(kind: str, path: Path) -> list[str]:
    if kind == "bound":
        return ["bound", "show", str(path)]
    return ["check", f"--{kind}", str(path)]


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``argv``; it must exit 2 with one line on stderr and nothing on stdout."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (code, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert out == "", out
    return err


KINDS = sorted(GOOD)


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_past_the_size_limit_is_one_line_naming_the_file_and_the_limit(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model.files, "MAX_BYTES", 256, raising=False)
    f = tmp_path / "big.toml"
    f.write_text(GOOD[kind] + "# padding\n" * 100, "utf-8")
    err = _one_line(capsys, _argv(kind, f))
    assert str(f) in err and "limit of 256 bytes" in err, err


@pytest.mark.parametrize("kind", KINDS)
def test_a_device_or_a_fifo_is_refused_before_it_is_opened(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that never ends (``/dev/zero`` behind a ``.toml`` name) or never starts (a FIFO
    no one writes: opening it would block) is refused in one line, unopened."""
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    err = _one_line(capsys, _argv(kind, zero))
    assert "not a regular file (a FIFO, a device or a socket)" in err, err
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)

    def hung(*_: object) -> None:  # liveness only: a loader that opens the FIFO blocks for ever
        raise AssertionError("the FIFO was opened: the loader blocks")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        err = _one_line(capsys, _argv(kind, fifo))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert "not a regular file (a FIFO, a device or a socket)" in err, err
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    err = _one_line(capsys, _argv(kind, folder))
    assert "not a regular file (a folder)" in err, err


@pytest.mark.parametrize("kind", KINDS)
def test_a_shipped_name_misspelt_is_one_line_in_one_form(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every loader that takes "a shipped name or a file" says the same thing of neither."""
    err = _one_line(capsys, _argv(kind, Path("no-such-thing")))
    assert "'no-such-thing' is neither a shipped " in err and "nor a .toml" in err, err


def test_the_default_limit_is_one_mib_and_admits_every_shipped_file() -> None:
    assert model.files.MAX_BYTES == 1 << 20
    shipped = [p for d in ("model/amendments",) for p in Path(d).glob("*.toml")]
    assert shipped and all(p.stat().st_size < model.files.MAX_BYTES for p in shipped)


LONG = "k" * 5000


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("profile", f'name = "agent"\n{LONG} = 1\n'),  # an unknown field
        ("profile", f'name = "agent"\non_load = "{LONG}"\n'),  # a value not allowed
        ("profile", f'name = "{LONG}"\non_load = "x"\n'),  # the profile's name in every line
        ("client", f'name = "client"\n{LONG} = 1\n'),
        ("client", f'name = "client"\nsends_prompt = "{LONG}"\n'),
        ("amend", f'name = "x"\nbase = "v1-stable"\n{LONG} = 1\n'),
        ("amend", f'name = "x"\nbase = "v1-stable"\n[must]\n{LONG} = "x"\n'),
        ("amend", f'name = "x"\nbase = "{LONG}"\n[must]\non_omit = "default"\n'),
        (
            "bound",
            GOOD["bound"].replace(
                'name = "tiny"\nconnections', f'{LONG} = 1\nname = "t"\nconnections'
            ),
        ),
        (
            "bound",
            GOOD["bound"].replace('modes = ["omitted", "override"]', f'modes = [["{LONG}"]]'),
        ),
        ("bound", GOOD["bound"].replace('clients = ["conforming"]', f'clients = ["{LONG}"]')),
        ("bound", GOOD["bound"].replace('"override: load_session fork"', f'"{LONG}"')),
    ],
)
def test_a_long_name_or_value_is_echoed_cut_short_without_a_suggestion(
    kind: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "long.toml"
    f.write_text(text, "utf-8")
    assert LONG in f.read_text("utf-8")
    err = _one_line(capsys, _argv(kind, f))
    assert "kkk…" in err and "k" * (model.files.SHOWN + 1) not in err, err
    assert "did you mean" not in err, err


def test_a_short_misspelling_still_gets_its_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "typo.toml"
    f.write_text('name = "agent"\non_lod = "default"\n', "utf-8")
    err = _one_line(capsys, _argv("profile", f))
    assert 'did you mean "on_load"' in err, err


def _encoded(kind: str, how: str) -> bytes:
    good = GOOD[kind]
    if how == "utf-16":
        return good.encode("utf-16")  # with its byte-order mark
    if how == "utf-16-be-bom":
        return codecs.BOM_UTF16_BE + good.encode("utf-16-be")
    if how == "utf-8-bom":
        return codecs.BOM_UTF8 + good.encode()
    if how == "invalid-utf-8":  # a stray byte on line 3
        lines = good.encode().split(b"\n")
        lines[2] = b"# caf\xe9 " + lines[2]
        return b"\n".join(lines)
    if how == "binary":
        return bytes(range(256)) * 4
    if how == "deep":  # tomllib recurses into nested arrays: RecursionError at ~1000 levels
        return good.encode() + b"\ndeep = " + b"[" * 5000 + b"]" * 5000 + b"\n"
    if how == "nested":  # parses, but deeper than any of our formats
        return good.encode() + b"\ndeep = " + b"[" * 40 + b"]" * 40 + b"\n"
    raise AssertionError(how)


HOW = {
    "utf-16": "UTF-16",
    "utf-16-be-bom": "UTF-16",
    "utf-8-bom": "byte-order mark",
    "invalid-utf-8": "line 3: not UTF-8",
    "binary": "not UTF-8",
    "deep": "nested too deeply",
    "nested": "nested too deeply",
}


@pytest.mark.parametrize("how", sorted(HOW))
@pytest.mark.parametrize("kind", KINDS)
def test_an_undecodable_or_too_deep_file_is_one_line_naming_the_file(
    kind: str, how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / f"{how}.toml"
    f.write_bytes(_encoded(kind, how))
    err = _one_line(capsys, _argv(kind, f))
    assert str(f) in err and HOW[how] in err, err


@pytest.mark.parametrize("kind", ["profile", "client"])
@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ('{"name": "x"}'.encode("utf-16"), "UTF-16"),
        (b'{"name": "\xff"}', "line 1: not UTF-8"),
        (b'{"name": "x", "d": ' + b"[" * 100000 + b"]" * 100000 + b"}", "nested too deeply"),
    ],
)
def test_a_json_profile_is_held_to_the_same(
    kind: str, data: bytes, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "p.json"
    f.write_bytes(data)
    err = _one_line(capsys, _argv(kind, f))
    assert str(f) in err and needle in err, err


# ---- the bound's counts have limits -----------------------------------------------------


def test_every_shipped_bound_is_within_the_limits(tmp_path: Path) -> None:
    for name, b in BOUNDS.items():
        f = tmp_path / f"{name}.toml"
        f.write_text(bound_toml(b), "utf-8")
        assert load_bound(str(f)) == b


@pytest.mark.parametrize(
    ("field", "line", "value"),
    [
        ("sessions", "sessions = 2", "sessions = 9223372036854775807"),
        ("connections", "connections = 1", "connections = 5"),  # 5! orders per world
        ("restarts", "restarts = 0", "restarts = 1000000"),
    ],
)
def test_a_count_past_its_limit_is_refused_naming_field_value_and_limit(
    field: str, line: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "huge.toml"
    text = GOOD["bound"].replace(line, value, 1)
    assert text != GOOD["bound"]
    f.write_text(text, "utf-8")
    with pytest.raises(BoundError) as e:
        load_bound(str(f))
    number = value.split(" = ")[1]
    assert f"scopes[0].{field}: {number} is over the limit of {LIMITS[field]}" in str(e.value)
    err = _one_line(capsys, _argv("bound", f))
    assert f"scopes[0].{field}" in err and str(LIMITS[field]) in err


def test_more_distinct_text_symbols_than_symmetry_can_permute_are_refused(tmp_path: Path) -> None:
    """Symbol symmetry tries every permutation of a scope's text symbols: seven are 5,040
    candidates per world, refused before the search starts."""
    f = tmp_path / "symbols.toml"
    seven = "prompts = [" + ", ".join(f'["{c}"]' for c in "abcdefg") + "]"
    text = GOOD["bound"].replace('prompts = ["omitted", ["a"], ["b"]]', seven, 1)
    assert text != GOOD["bound"]
    f.write_text(text, "utf-8")
    with pytest.raises(BoundError, match="7 distinct text symbols, over the limit of 6"):
        load_bound(str(f))


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("prompts", 'prompts = ["omitted", ["a"], ["b"]]', "prompts = [" + '["a"], ' * 40 + "]"),
        ("modes", 'modes = ["omitted", "override"]', "modes = [" + '"x", ' * 40 + "]"),
        ("clients", 'clients = ["conforming"]', "clients = [" + '"conforming", ' * 40 + "]"),
        ("blocks", 'prompts = ["omitted", ["a"], ["b"]]', "prompts = [[" + '"a", ' * 40 + "]]"),
    ],
)
def test_a_list_past_its_limit_is_refused(field: str, old: str, new: str, tmp_path: Path) -> None:
    f = tmp_path / "wide.toml"
    text = GOOD["bound"].replace(old, new, 1)
    assert text != GOOD["bound"]
    f.write_text(text, "utf-8")
    with pytest.raises(BoundError, match=f"40 .*over the limit of {LIMITS[field]}"):
        load_bound(str(f))


def test_the_bound_help_and_the_bounds_page_state_the_limits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from simulations.cli import parser

    with pytest.raises(SystemExit):
        parser().parse_args(["bound", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    page = " ".join(Path("docs/bounds.md").read_text("utf-8").split())
    for key, n in LIMITS.items():
        said = f"{n} {key.replace('_', ' ')}"
        assert said in help_text, (said, help_text)
        assert said in page, said


# ---- standard output that refuses writes --------------------------------------------------

FULL = [
    ["list"],
    ["list", "--json"],
    ["bound", "show", "tiny"],
    ["check", "--bound", "tiny", "--quiet"],
    ["validate", "tests/fixtures/validate/sacp-tee.log"],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", FULL, ids=lambda a: " ".join(a[:2]))
def test_a_full_standard_output_is_one_line_and_exit_2(argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "simulations", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,  # liveness only
        )
    err = proc.stderr
    assert proc.returncode == 2, (proc.returncode, err)
    assert err.strip().splitlines() == [
        "acp-sysprompt: error: cannot write to standard output: No space left on device"
    ], err
    assert "Traceback" not in err and "Exception ignored" not in err
