"""The commands of the README and of docs/ run as written, and print what the pages quote.

A fenced block whose info string is ``sh runnable`` is a script: it runs under bash, from a
scratch copy of the repository root (each top-level entry a symbolic link, ``out/`` left out, so
what a command writes under ``out/`` lands in the scratch folder), with this interpreter's
folder (the project's ``.venv/bin``) first on ``PATH``, so ``acp-sysprompt`` and ``python``
are the project's. Every command must exit 0 or 1 (1 is a verdict: a violated rule, a finding, a
claim not kept); one that exits 2 or more (bad usage, an internal error) ends the block and
fails it. A ``text`` block right after it (nothing but blank lines between) quotes its output,
stdout and stderr together: each quoted line must equal a line of the output, in any order,
where ``…`` stands for any text. ``sh runnable exhaustive`` marks a block that takes minutes: it
runs under ``make exhaustive`` (pytest marker ``exhaustive``) only. docs/cli.md, "Runnable
blocks in the docs", says the same to the reader. The agent author's CI pipeline (a GitHub
Actions workflow in docs/guide-agent-author.md, with the files it reads) runs too: its ``run:``
lines in a scratch repository of those files.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GUIDES = [f"guide-{who}.md" for who in ("spec-author", "agent-author", "client-author", "reviewer")]
README_MAX_LINES = 250

FENCE = re.compile(r"^```([^`\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
OPTIONS = {"exhaustive"}
# exit 2 or more ends the script, naming the command (bash's ERR trap sees each command's status)
GUARD = (
    "trap 'rc=$?; if [ $rc -ge 2 ]; then "
    'echo "test_docs: exit $rc from: $BASH_COMMAND" >&2; exit $rc; fi\' ERR\n'
)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence
    script: str
    expected: tuple[str, ...]
    exhaustive: bool

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The runnable blocks of one page, each with the output lines quoted after it."""
    text = path.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    found = []
    for i, m in enumerate(fences):
        info = m.group(1).split()
        if info[:2] != ["sh", "runnable"]:
            continue
        unknown = set(info[2:]) - OPTIONS
        line = text.count("\n", 0, m.start()) + 1
        page = str(path.relative_to(root))
        assert not unknown, f"{page}:{line}: unknown option(s) {sorted(unknown)}"
        expected: tuple[str, ...] = ()
        if i + 1 < len(fences):
            nxt = fences[i + 1]
            if nxt.group(1).split() == ["text"] and not text[m.end() : nxt.start()].strip():
                expected = tuple(s.rstrip() for s in nxt.group(2).splitlines() if s.strip())
        found.append(Block(page, line, m.group(2), expected, "exhaustive" in info[2:]))
    return found


ALL = [b for p in PAGES for b in blocks(p)]


def line_pattern(quoted: str) -> re.Pattern[str]:
    """A quoted output line as a pattern: literal text, ``…`` for any run of characters."""
    return re.compile(".*".join(re.escape(part) for part in quoted.split("…")))


def missing(expected: tuple[str, ...], output: str) -> list[str]:
    """The quoted lines no line of ``output`` matches."""
    lines = [s.rstrip() for s in output.splitlines()]
    return [q for q in expected if not any(line_pattern(q).fullmatch(s) for s in lines)]


def run(block: Block, scratch: Path) -> subprocess.CompletedProcess[str]:
    scratch.mkdir()
    for entry in ROOT.iterdir():
        if entry.name != "out":
            (scratch / entry.name).symlink_to(entry)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", GUARD + block.script],
        cwd=scratch,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800 if block.exhaustive else 300,
    )


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=b.name, marks=[pytest.mark.exhaustive] if b.exhaustive else [])
        for b in ALL
    ],
)
def test_a_documented_command_prints_what_its_page_quotes(block: Block, tmp_path: Path) -> None:
    done = run(block, tmp_path / "repo")
    tail = done.stdout[-4000:]
    assert done.returncode in (0, 1), f"{block.name}: exit {done.returncode}\n{tail}"
    lost = missing(block.expected, done.stdout)
    assert not lost, f"{block.name}: quoted lines not in the output: {lost}\n--- output:\n{tail}"


def test_every_guide_has_a_runnable_block_that_make_test_runs() -> None:
    for guide in GUIDES:
        assert (ROOT / "docs" / guide).is_file(), guide
        quick = [b for b in ALL if b.page == f"docs/{guide}" and not b.exhaustive]
        assert quick, f"docs/{guide} has no runnable block outside make exhaustive"


def test_the_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move reference text to docs/"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for guide in GUIDES:
        assert f"(docs/{guide})" in readme, f"the README links no door to docs/{guide}"


PENDING: set[str] = set()  # paths a page may link to before they land (none now)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces
    as hyphens; code fences skipped)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    titles = re.findall(r"^#{1,6} (.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", s.strip().lower()).replace(" ", "-") for s in titles}


def test_relative_links_of_the_pages_name_files_and_headings_that_exist() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            path, _, anchor = target.partition("#")
            if re.match(r"[a-z]+:", path):
                continue
            resolved = (page.parent / path).resolve() if path else page
            if str(resolved.relative_to(ROOT)) + ("/" if path.endswith("/") else "") in PENDING:
                continue
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_a_changed_or_missing_line_fails_and_an_ellipsis_matches_any_text() -> None:
    output = "acp-sysprompt validate: v1-stable  1 file(s)  10 messages  0.2s\nclean: no violation"
    assert missing(("acp-sysprompt validate: v1-stable  1 file(s)  10 messages  …",), output) == []
    assert missing(("clean: no violation", "…"), output) == []
    assert missing(("clean: no violations",), output) == ["clean: no violations"]
    assert missing(("acp-sysprompt validate: v1-stable  1 file(s)  11 messages  …",), output)
    assert missing(("no violation",), output) == ["no violation"]  # a whole line, not a part
    assert missing(("clean: … (.*)",), "clean: x (.*)\n") == []  # the rest is literal


def test_the_blocks_are_read_with_their_quoted_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh runnable\necho hi\n```\n\n```text\nhi\n```\n"
        "```sh\nnot run\n```\n```sh runnable exhaustive\nsleep 1\n```\n",
        encoding="utf-8",
    )
    found = blocks(page, root=tmp_path)
    assert [(b.line, b.script, b.expected, b.exhaustive) for b in found] == [
        (1, "echo hi\n", ("hi",), False),
        (11, "sleep 1\n", (), True),
    ]


def test_a_command_that_exits_2_or_more_fails_its_block(tmp_path: Path) -> None:
    bad = Block("page.md", 1, "acp-sysprompt check --no-such-option\necho not reached\n", (), False)
    done = run(bad, tmp_path / "repo")
    assert done.returncode == 2, done.stdout
    assert "test_docs: exit 2 from: acp-sysprompt check --no-such-option" in done.stdout
    assert "not reached" not in done.stdout
    verdict = Block("page.md", 1, "acp-sysprompt validate missing.log || true\nexit 1\n", (), False)
    assert run(verdict, tmp_path / "other").returncode == 1


# ---- the agent author's pipeline ----------------------------------------------------------
# docs/guide-agent-author.md, "6. In CI: a pipeline for your agent's repository"

PIPELINE = ROOT / "docs" / "guide-agent-author.md"
INSTALL = "python -m pip install ./acp-sysprompt"
NARROW = ("--bound", "tiny", "--only", "T13")  # the plan the test runs: short, T13 reached
# a stand-in for the author's agent: the reference agent, its model calls to OPENAI_BASE_URL
STAND_IN = """\
import os
import sys

url = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
store = os.path.join(os.environ["HOME"], "store")
argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
argv += ["--model-api", "chat", "--model-endpoint", url, "--store", store]
os.execv(sys.executable, argv)
"""


def pipeline(page: Path) -> tuple[dict[str, str], list[str], str]:
    """The guide's pipeline: its files (each ``toml``/``yaml`` block whose first line is a
    ``# path`` comment: path → text), the workflow's ``run:`` lines in order, and the
    workflow itself."""
    files: dict[str, str] = {}
    for m in FENCE.finditer(page.read_text(encoding="utf-8")):
        head, _, _ = m.group(2).partition("\n")
        if m.group(1).strip() in ("toml", "yaml") and head.startswith("# "):
            files[head[2:].strip()] = m.group(2)
    workflow = next((text for path, text in files.items() if path.startswith(".github/")), "")
    runs = [m.group(1).strip() for m in re.finditer(r"^\s+run: (.+)$", workflow, re.M)]
    return files, runs, workflow


def test_the_agent_authors_pipeline_runs_as_documented(tmp_path: Path) -> None:
    """The workflow's ``run:`` lines, in a scratch repository of the guide's files and a
    stand-in agent: the install is this checkout's (``./acp-sysprompt`` a link to it; the venv
    that runs this test has it installed, so the line is checked, not re-run: no network);
    ``conform`` runs as written, narrowed to the tiny bound and T13 to keep make test short;
    it must exit 0 (the pins hold) and leave the ``--out`` folder and the ``--junit`` file
    the upload step keeps, the JUnit file valid by the schema's rules."""
    from test_junit import outcomes, schema_problems

    files, runs, workflow = pipeline(PIPELINE)
    assert {"ci/acp-agent.toml", "ci/acp-expect.toml"} <= set(files), sorted(files)
    assert runs and runs[0] == INSTALL, runs
    repo = tmp_path / "agent-repo"
    repo.mkdir()
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    (repo / "agent.py").write_text(STAND_IN, encoding="utf-8")
    (repo / "acp-sysprompt").symlink_to(ROOT)
    assert (repo / "acp-sysprompt" / "pyproject.toml").is_file()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    conform = [line for line in runs if line.startswith("acp-sysprompt conform ")]
    assert len(conform) == 1 and len(runs) == 2, runs
    for flag in ("--expect", "--junit", "--out"):
        assert f" {flag} " in conform[0], conform
    done = subprocess.run(
        ["bash", "-c", GUARD + conform[0] + " " + " ".join(NARROW)],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert "expectations: my-agent 1.0.0 as pinned in ci/acp-expect.toml" in done.stdout
    kept = re.search(r"upload-artifact@\S+\n(?:\s+.*\n)*?\s+path: (\S+)", workflow)
    assert kept is not None, workflow
    junit = re.search(r"--junit (\S+)", conform[0])
    out = re.search(r"--out (\S+)", conform[0])
    assert junit is not None and out is not None
    for written in (junit.group(1), out.group(1)):
        assert (repo / written).exists(), written
        assert (repo / written).resolve().is_relative_to((repo / kept.group(1)).resolve())
    assert (repo / out.group(1) / "README.md").is_file()
    data = (repo / junit.group(1)).read_bytes()
    assert schema_problems(data) == []
    got = outcomes(data)
    assert got["T13"] == "passed" and got["VERDICT"] == "passed" and got["EXPECTATIONS"] == "passed"
