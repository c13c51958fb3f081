"""Every ✗ pasteable: ``counterexample --amend/--member/--profile/--client`` and ``check --out``.

A counterexample of an amendment's member, of a population's member or of a profile is written
in the same five forms as a revision's; its review.md says what was checked, and the ITF keeps
what ``replay`` needs to rebuild the tables (the member, the client profile), so the replay
reproduces the violation. ``check --out DIR`` writes one such folder per ✗: ``DIR/<id>/`` for
one build, ``DIR/<id>-<choices>/`` per heading "lost where" for a population or an amendment.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simulations.cli import main
from simulations.outputs.forms import FILES, FOLDER_LIMIT, folder_name

pytestmark = pytest.mark.usefixtures("shared_explorations")

TINY = ["--bound", "tiny", "--quiet"]
# the first member of the population (reference build first) that loses P4 on the tiny bound
FIRST_P4 = (
    "on_omit=default, on_differ=keep, on_empty=reject, without_capability=default, "
    "active_reopen=serve, client_resends=any"
)
# agent-keeps-stored-prompt's edit, claiming P4 too: the tiny bound shows the claim fails
KEEPS_P4 = """\
name = "keeps-claims-p4"
base = "v1-stable"
summary = "keep the stored prompt on a differing re-send; claims P4, which it does not give"
fixes = ["P4"]

[must]
on_differ = "keep"
"""
MY_AGENT = """\
name = "my-agent"
revision = "v1-stable"
on_load = "default"
fork_inherits = false
"""
SAFE = re.compile(r"[A-Za-z0-9_,=+-]+")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _heading(folder: Path) -> str:
    return (folder / "review.md").read_text(encoding="utf-8").splitlines()[0]


def _meta(folder: Path) -> dict[str, object]:
    meta = json.loads((folder / "trace.itf.json").read_text(encoding="utf-8"))["#meta"]
    assert isinstance(meta, dict)
    return meta


def _replays(capsys: pytest.CaptureFixture[str], folder: Path, rid: str) -> bool:
    """Whether ``replay`` of the folder's ITF reproduces ``rid`` (exit 1, "reproduced")."""
    code, out, _ = _run(capsys, "replay", str(folder / "trace.itf.json"))
    reproduced = f"reproduced: {rid} violated" in out
    assert code == (1 if reproduced else 0), out
    return reproduced


def _without(folder: Path, key: str) -> Path:
    """A copy of the folder's ITF with ``#meta[key]`` dropped (what replay would do blind)."""
    doc = json.loads((folder / "trace.itf.json").read_text(encoding="utf-8"))
    del doc["#meta"][key]
    blind = folder.parent / f"{folder.name}-without-{key}"
    blind.mkdir()
    (blind / "trace.itf.json").write_text(json.dumps(doc), encoding="utf-8")
    return blind


def test_counterexample_of_an_amendment_names_it_and_the_first_member_that_violates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    amend = _file(tmp_path, "keeps-p4.toml", KEEPS_P4)
    out_dir = tmp_path / "cx"
    code, out, err = _run(
        capsys, "counterexample", "--amend", amend, "--id", "P4", *TINY, "--out", str(out_dir)
    )
    assert code == 0, err
    assert f"member: {FIRST_P4} (the first of 48 members of amendment keeps-claims-p4" in out
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(FILES)
    heading = _heading(out_dir)
    assert heading.startswith("### P4 violated — member `" + FIRST_P4 + "` of amendment ")
    assert f"`keeps-claims-p4` (file `{amend}`) of revision `v1-stable`" in heading
    assert _meta(out_dir)["member"] == dict(kv.split("=") for kv in FIRST_P4.split(", "))
    assert _meta(out_dir)["amendment"] == amend
    # replay rebuilds the member's tables from the ITF; the reference build's do not lose P4
    assert _replays(capsys, out_dir, "P4")
    assert not _replays(capsys, _without(out_dir, "member"), "P4")


def test_counterexample_of_a_shipped_amendment_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "cx"
    code, _, err = _run(
        capsys,
        "counterexample",
        *("--amend", "agent-keeps-stored-prompt", "--id", "P4", *TINY, "--out", str(out_dir)),
    )
    assert code == 0, err
    assert "of amendment `agent-keeps-stored-prompt` of revision `v1-stable`" in _heading(out_dir)
    assert "(file " not in _heading(out_dir)  # a shipped amendment is named, not a path


def test_member_picks_a_member_and_a_bad_one_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    amend = _file(tmp_path, "keeps-p4.toml", KEEPS_P4)
    base = ["counterexample", "--amend", amend, "--id", "P4", *TINY]
    other = FIRST_P4.replace("client_resends=any", "client_resends=none")
    code, out, err = _run(capsys, *base, "--member", other, "--out", str(tmp_path / "a"))
    assert code == 0, err
    assert "member: " not in out  # named, not picked
    assert f"member `{other}` of amendment" in _heading(tmp_path / "a")
    # its choices in another order: the same member
    turned = ", ".join(reversed(other.split(", ")))
    code, _, err = _run(capsys, *base, "--member", turned, "--out", str(tmp_path / "b"))
    assert code == 0, err
    assert _heading(tmp_path / "b") == _heading(tmp_path / "a")
    # the reference build keeps P4 within the bound: no counterexample, exit 1
    code, out, _ = _run(capsys, *base, "--member", "reference", "--out", str(tmp_path / "c"))
    assert code == 1 and "P4 holds within bound tiny" in out
    # not a member: one line, exit 2, naming a few members as check prints them
    bad = ["--member", "on_differ=apply", "--out", str(tmp_path / "d")]
    code, out, err = _run(capsys, *base, *bad)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "argument --member: 'on_differ=apply' is no member of amendment keeps-claims-p4" in err
    assert err.count("on_omit=") == 3
    assert not (tmp_path / "d").exists()
    # issue 55, item 8: the choices that matter are enough; the others are the reference
    # build's (on_differ=keep: the amended text's), and a line says which were filled in
    many = ["--member", "on_omit=default", "--out", str(tmp_path / "e")]
    code, out, err = _run(capsys, *base, *many)
    assert code == 0, err
    filled = "on_differ, on_empty, without_capability, active_reopen, client_resends"
    assert f"member: {FIRST_P4} ({filled}: the reference build's)" in out
    assert f"member `{FIRST_P4}` of amendment" in _heading(tmp_path / "e")


def test_member_of_a_revision_that_leaves_choices_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    member = FIRST_P4.replace("on_differ=keep", "on_differ=apply")
    out_dir = tmp_path / "cx"
    code, _, err = _run(
        capsys,
        "counterexample",
        *("--revision", "v1-stable", "--member", member, "--id", "P4", *TINY),
        *("--out", str(out_dir)),
    )
    assert code == 0, err
    assert _heading(out_dir).startswith(f"### P4 violated — member `{member}` of revision ")
    assert _replays(capsys, out_dir, "P4")


def test_counterexample_of_a_profile_file_names_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _file(tmp_path, "my-agent.toml", MY_AGENT)
    out_dir = tmp_path / "cx"
    code, _, err = _run(
        capsys, "counterexample", "--profile", agent, "--id", "P4", *TINY, "--out", str(out_dir)
    )
    assert code == 0, err
    assert _heading(out_dir).startswith(
        f"### P4 violated — profile `my-agent` (file `{agent}`) over revision `v1-stable`"
    )
    review = (out_dir / "review.md").read_text(encoding="utf-8")
    assert f"`replay` reads `{agent}` again from that path" in review
    assert f"--profile {agent}" in review  # the replay command
    assert _replays(capsys, out_dir, "P4")


def test_counterexample_of_a_client_profile_replays_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "cx"
    code, _, err = _run(
        capsys,
        "counterexample",
        *("--client", "acpx-any-agent", "--revision", "v1-stable", "--id", "T13", *TINY),
        *("--out", str(out_dir)),
    )
    assert code == 0, err
    assert "client `acpx-any-agent` driving the reference agent over revision `v1-stable`" in (
        _heading(out_dir)
    )
    assert _meta(out_dir)["client_profile"] == "acpx-any-agent"
    assert "_meta" in (out_dir / "transcript.ndjson").read_text(encoding="utf-8")
    assert _replays(capsys, out_dir, "T13")
    assert not _replays(capsys, _without(out_dir, "client_profile"), "T13")


def _folders(out_dir: Path) -> list[Path]:
    folders = sorted(p for p in out_dir.iterdir() if p.is_dir())
    for d in folders:
        assert SAFE.fullmatch(d.name) and len(d.name) <= FOLDER_LIMIT, d.name
        assert sorted(p.name for p in d.iterdir()) == sorted(FILES)
    return folders


def test_check_out_writes_one_folder_per_violated_id_of_one_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = _run(
        capsys,
        "check",
        *("--reference", "--revision", "v1-stable", *TINY, "--json", "--out", str(out_dir)),
    )
    assert code == 0, err
    violated = sorted(rid for rid, v in json.loads(out)["verdicts"].items() if v == "violated")
    assert violated  # P4, P5, P7, P8 and T6 on the tiny bound
    folders = _folders(out_dir)
    assert [d.name for d in folders] == violated
    assert f"wrote {len(violated)} counterexample folder(s)" in err  # --json: on stderr
    for d in folders:
        assert _heading(d).startswith(f"### {d.name} violated — revision `v1-stable`")
    assert _replays(capsys, out_dir / "P4", "P4")


def test_check_out_of_a_population_writes_one_folder_per_heading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = _run(
        capsys, "check", "--revision", "v1-stable", *TINY, "--json", "--out", str(out_dir)
    )
    assert code == 0, err
    props = json.loads(out)["properties"]
    headings = {
        folder_name(rid, ",".join(f"{k}={v}" for k, v in lost["choices"].items()))
        if lost["choices"]
        else folder_name(rid, "every member"): (rid, lost["member"])
        for rid, p in props.items()
        for lost in p["lost_where"]
    }
    assert len(headings) >= 2
    folders = _folders(out_dir)
    assert {d.name for d in folders} == set(headings)
    for d in folders:
        rid, member = headings[d.name]
        assert _heading(d).startswith(f"### {rid} violated — ")  # the member in words
        assert _heading(d).endswith("; revision `v1-stable`")
        assert _meta(d)["member"] == member
    first = folders[0]
    assert _replays(capsys, first, headings[first.name][0])


def test_check_out_of_an_amendment_writes_its_failing_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    amend = _file(tmp_path, "keeps-p4.toml", KEEPS_P4)
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, "check", "--amend", amend, *TINY, "--out", str(out_dir))
    assert code == 1, err  # the claim is not kept
    assert "claims P4: NOT kept" in out
    every = _folders(out_dir)
    folders = [d for d in every if d.name.startswith("P4-")]
    assert [d.name for d in folders] == [
        "P4-on_omit=default,client_resends=any",
        "P4-on_omit=default,client_resends=none",
    ]
    # keeping a differing re-sent prompt silently also misleads the client (P9, issue 55)
    assert [d.name for d in every if d not in folders] == [
        "P9-client_resends=any",
        "P9-on_omit=default,client_resends=none",
    ]
    for d in folders:
        review = (d / "review.md").read_text(encoding="utf-8")
        assert "Claim P4 of amendment `keeps-claims-p4`: **NOT kept**" in review
        assert "; amendment `keeps-claims-p4` of revision `v1-stable`" in _heading(d)
        assert "--amend " + amend in review  # the command that writes it again
        assert _replays(capsys, d, "P4")
    # an --out that exists is written into, as every command's --out is
    code, _, _ = _run(capsys, "check", "--amend", amend, *TINY, "--out", str(out_dir))
    assert code == 1 and [d.name for d in _folders(out_dir)] == [d.name for d in every]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["counterexample", "--revision", "rfd-final", "--member", "reference"], "--member"),
        (["counterexample", "--mutant", "load_restores_default", "--member", "x=y"], "--member"),
        (["counterexample", "--profile", "buzz-agent", "--member", "x=y"], "--member"),
        (["counterexample", "--amend", "stable-prompt", "--profile", "buzz-agent"], "--amend"),
        (["counterexample", "--amend", "stable-prompt", "--client", "acpx-any-agent"], "--amend"),
        (["counterexample", "--amend", "stable-prompt", "--revision", "rfd-final"], "--amend"),
        (["counterexample", "--amend", "no-such-amendment"], "--amend"),
        (["counterexample", "--profile", "no-such-profile"], "--profile"),
    ],
)
def test_bad_combinations_are_one_line_exit_2(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, *argv, "--id", "P4", *TINY, "--out", str(out_dir))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"acp-sysprompt: error: argument {says}")
    assert not out_dir.exists()


def test_check_out_that_is_a_file_is_one_line_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = _file(tmp_path, "taken", "")
    code, out, err = _run(capsys, "check", "--revision", "v1-stable", *TINY, "--out", taken)
    assert code == 2 and out == ""
    assert err == f"acp-sysprompt: error: argument --out: {taken!r}: not a directory\n"


def test_folder_names_are_safe_and_bounded() -> None:
    assert folder_name("P4") == "P4"
    assert folder_name("P4", "on_omit=default,client_resends=none") == (
        "P4-on_omit=default,client_resends=none"
    )
    assert folder_name("P9", "every member") == "P9-every-member"
    odd = folder_name("R1", "../../etc/passwd x\n" + "y" * 300)
    assert "/" not in odd and ".." not in odd and len(odd) <= FOLDER_LIMIT
    assert SAFE.fullmatch(odd)
    # two long names that differ only past the cut stay apart
    assert folder_name("R1", "a" * 200 + "1") != folder_name("R1", "a" * 200 + "2")
