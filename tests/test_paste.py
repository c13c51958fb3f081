"""Ready to paste (issue 55, item 5): review.md of ``check --out`` and the report's upstream blocks.

Each such block can be pasted as it is into a GitHub review: the rule quoted with its keyword
in words and its source, the member named only by the choices that matter to its path (in
words), each rule its path broke in words ("the client skipped a SHOULD"), where the v1 rules
are read from, the steps with their replies (the turn's system slot) as an inline Mermaid
block, no tool-internal ``_meta``, at most PASTE_LIMIT (2,000) characters, and last the
command that reproduces it from a fresh clone. Checked on every review.md ``check --out`` writes
for v1-stable on the ``tiny`` and ``choices`` bounds and for the shipped proposal that echoes the
prompt (its replies carry it) on ``choices``; the report's blocks on ``tiny``, and on ``default``
under ``make exhaustive``.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from model.population import CHOICES, describe
from model.spec import REQUIREMENTS
from simulations.cli import main
from simulations.outputs.paste import CHOICE_WORDS, PASTE_LIMIT, V1_SOURCE
from simulations.outputs.report import SUBJECTS, build_report

pytestmark = pytest.mark.usefixtures("shared_explorations")

T6 = REQUIREMENTS["T6"]


def _pattern(folder: str) -> tuple[str, list[tuple[str, str]]]:
    """``P4-on_differ=apply,client_resends=any`` → ("P4", the heading's choices)."""
    rid, _, rest = folder.partition("-")
    pairs = [kv.split("=") for kv in rest.split(",")] if "=" in rest else []
    return rid, [(k, v) for k, v in pairs]


def _last_command(text: str) -> str:
    """The block's last lines are a ```sh fence holding one command; that command."""
    tail = text.rstrip("\n").splitlines()[-3:]
    assert tail[0] == "```sh" and tail[2] == "```", tail
    return tail[1]


def _ready(text: str, rid: str) -> None:
    """What every pasted block has, whatever it is about."""
    req = REQUIREMENTS[rid]
    assert f"> **{rid}**, an end-to-end property (ours, not the spec's): {req.text}" in text
    assert f"> — `{req.source}`" in text
    mermaid = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert mermaid.startswith("sequenceDiagram\n")
    lines = mermaid.splitlines()
    assert "participant A as Agent" in lines
    replies = [ln for ln in lines if re.match(r"A(-->>|--x)c\d", ln)]
    assert replies and len(replies) == len([ln for ln in lines if "->>A: " in ln])
    turns = [i for i, ln in enumerate(lines) if re.search(r"->>A: \d+\. session/prompt", ln)]
    for i in turns:  # each turn's reply shows its system slot (where the prompt shows gone)
        assert "system slot=[" in lines[i + 1], lines[i + 1]
    assert "_meta" not in text
    assert PASTE_LIMIT == 2000  # issue 55, item 5: it pastes into a GitHub review
    assert len(text) <= PASTE_LIMIT, len(text)


def _names_the_member(heading: str, where: list[tuple[str, str]]) -> None:
    """The member by the choices that matter to its path, in words, each with what leaves it
    open (``T16 is silent``, ``T6 is a SHOULD``, ``the text is silent``), and no choice's name."""
    for k, v in where:
        left_open = CHOICES[k].rid
        said = f"({left_open} is " if left_open is not None else "(the text is silent)"
        assert f"{CHOICE_WORDS[k, v]} {said}" in heading, (k, v)
    assert (
        (" with any client" in heading or "a client that" in heading)
        if where
        else (" — every pair v1-stable allows; " in heading)
    )
    assert not any(f"{k}=" in heading or f"{k} " in heading for k in CHOICES)


_RULE = re.compile(
    r"- At step \d+ (the .+?|end to end) (skipped a SHOULD|broke a .+?) \((\w+)\): (.+) — `(.+)`"
)


def _path_rules_and_v1(review: str) -> None:
    """Each rule the path broke, in words with its text and source; the line on where the v1
    rules are read from wherever the block names a T id (in the heading or the path's rules)."""
    before = review.split("```mermaid", 1)[0]
    for line in (ln for ln in before.splitlines() if ln.startswith("- ")):
        m = _RULE.fullmatch(line)
        assert m is not None, line
        req = REQUIREMENTS[m[3]]
        verb = (
            "skipped a SHOULD" if req.keyword.value == "SHOULD" else f"broke a {req.keyword.value}"
        )
        assert (m[2], m[4]) == (verb, req.text) and req.source.endswith(m[5]), line
    if re.search(r"\bT\d+\b", before):
        assert V1_SOURCE in before and "not public" in V1_SOURCE


def _check_out_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bound: str, *which: str
) -> list[Path]:
    out_dir = tmp_path / f"ce-{bound}"
    code = main(["check", *which, "--bound", bound, "--out", str(out_dir)])
    capsys.readouterr()
    assert code == 0
    return sorted(d for d in out_dir.iterdir() if d.is_dir())


def _check_review(folder: Path, bound: str, of: str, which: str) -> str:
    """One review.md of ``check --out``: ready to paste, its heading naming the member in
    words and what was checked (``of``), and last the command (``which``: ``--revision R`` or
    ``--amend NAME``) that writes it again on ``bound``."""
    review = (folder / "review.md").read_text(encoding="utf-8")
    rid, where = _pattern(folder.name)
    _ready(review, rid)
    heading = review.splitlines()[0]
    assert heading.startswith(f"### {rid} violated — ") and heading.endswith(of)
    _names_the_member(heading, where)
    _path_rules_and_v1(review)
    assert "active_reopen" not in review.split("```sh")[0]
    command = _last_command(review)
    assert command.startswith(f"acp-sysprompt counterexample {which} --bound {bound} --id {rid}")
    # the ITF keeps the whole member (replay needs it); the command names it
    member = json.loads((folder / "trace.itf.json").read_text(encoding="utf-8"))["#meta"]["member"]
    assert describe(tuple((k, member[k]) for k in CHOICES)) in command
    return review


def test_review_md_of_check_out_is_ready_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = _check_out_folders(tmp_path, capsys, "tiny", "--revision", "v1-stable")
    assert len(folders) == 9  # the tiny bound's headings "lost where" (guide-spec-author §3)
    for d in folders:
        review = _check_review(d, "tiny", "; revision `v1-stable`", "--revision v1-stable")
        rid, _ = _pattern(d.name)
        # the replies kept: a turn's slot, or (P9, judged on the answer that attaches the
        # session, issue 55) that answer
        assert "A-->>c0: ok system slot=[" in review or (
            rid == "P9" and "A-->>c0: ok sessionId=" in review
        )
        # on tiny every path has the client's SHOULD, in words, with the rule's text and source
        assert f"the client skipped a SHOULD (T6): {T6.text}" in review
        assert "#/$defs/LoadSessionRequest/properties/systemPrompt" in review
        assert V1_SOURCE in review
    # the command reproduces the very counterexample, from nothing but a fresh clone
    first = folders[0]
    argv = shlex.split(_last_command((first / "review.md").read_text(encoding="utf-8")))[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "again")
    assert main([*argv, "--quiet"]) == 0
    capsys.readouterr()
    again = json.loads((tmp_path / "again" / "trace.itf.json").read_text(encoding="utf-8"))
    written = json.loads((first / "trace.itf.json").read_text(encoding="utf-8"))
    assert again["states"] == written["states"]


def test_every_review_md_on_the_choices_bound_is_ready_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the bound a spec author loops on: its paths are longer than tiny's (restarts, a
    # capability lost), so its blocks are the longest a revision's check --out writes
    folders = _check_out_folders(tmp_path, capsys, "choices", "--revision", "v1-stable")
    assert len(folders) == 24  # the choices bound's headings "lost where" of v1-stable
    restarts = 0
    for d in folders:
        review = _check_review(d, "choices", "; revision `v1-stable`", "--revision v1-stable")
        restarts += "(after restart 1)" in review and "connects again" in review
    assert restarts  # a path over a restart: its client's second participant, its replies


def test_every_review_md_of_the_echo_proposal_is_ready_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the shipped proposal whose answers to load/resume/fork carry the effective prompt:
    # the longest replies a pasted diagram shows
    amend = ("--amend", "echo-effective-prompt")
    folders = _check_out_folders(tmp_path, capsys, "choices", *amend)
    assert folders
    of = "; amendment `echo-effective-prompt` of revision `v1-stable`"
    reviews = [_check_review(d, "choices", of, " ".join(amend)) for d in folders]
    assert any(re.search(r"A-->>c0: ok systemPrompt=\{mode=", r) for r in reviews)


def _upstream_blocks(text: str) -> list[str]:
    section = text.split("## Findings to take upstream", 1)[1].split("\n## ", 1)[0]
    return ["### " + b.strip() for b in section.split("\n### ")[1:]]


def _report_blocks(tmp_path: Path, bound: str) -> list[str]:
    base = tuple(s for s in SUBJECTS if s.label == "v1-stable, restart may change the agent")
    path = build_report(tmp_path, bound, base, mutants=())
    return _upstream_blocks(path.read_text(encoding="utf-8"))


def _check_upstream(blocks: list[str], bound: str) -> None:
    assert blocks
    for block in blocks:
        rid = block.split()[1]
        _ready(block, rid)
        assert "](" not in block  # no link into the report's folders: they do not paste
        assert "Lost by an agent that " in block or "Lost by every pair" in block
        assert "amendment" in block
        command = _last_command(block)
        assert command.startswith("acp-sysprompt counterexample --revision v1-stable")
        assert (f"--bound {bound}" in command) == (bound != "default")


def test_the_reports_upstream_blocks_are_ready_to_paste(tmp_path: Path) -> None:
    blocks = _report_blocks(tmp_path, "tiny")
    assert [b.split()[1] for b in blocks] == ["P4", "P5", "P7", "P8"]
    _check_upstream(blocks, "tiny")
    assert all(V1_SOURCE in b and "the client skipped a SHOULD (T6)" in b for b in blocks)
    assert all("A-->>c0: ok system slot=[" in b for b in blocks)


@pytest.mark.exhaustive  # a repeat on a bigger case: the report's own bound (about a minute)
def test_the_reports_upstream_blocks_are_ready_to_paste_on_the_default_bound(
    tmp_path: Path,
) -> None:
    blocks = _report_blocks(tmp_path, "default")
    assert [b.split()[1] for b in blocks] == ["P1", "P2", "P3", "P4", "P5", "P7", "P8", "P9"]
    _check_upstream(blocks, "default")
