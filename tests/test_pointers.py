"""Every pointer to a section of our pages lands on a heading that exists.

Code, help text and pages point readers at sections: ``README, "Two commands"``,
``docs/cli.md "Runnable blocks in the docs"``, ``docs/conform.md#tiers-pseudo-ids-and-the-verdict``,
``guide-spec-author §3``. A section that is renamed, moved or split leaves such a pointer
dangling, and nothing else notices: the text still prints. This test reads them all — the
strings, docstrings and comments of the Python code, the other tracked text files (pages,
recipes, notebooks, the Makefile), the help of every command, and the pages the suite writes
cheaply (a check's ``report.md``) — and fails on one whose page or heading does not exist.

A pointer names a page of this repository: ``README``/``README.md`` (the project's, unless an
``owner/repo`` comes before it), ``docs/NAME.md``, or a bare ``NAME.md``/``guide-…`` that is one
of our pages (a bare name that is not, like an upstream document, is somebody else's page). A
quoted title must equal a heading of that page (markup and case aside); an ``#anchor`` must be
the anchor GitHub gives one of its headings; ``§N`` must be a heading numbered ``N.``.

The same for the code's own names: a ``model.…`` or ``simulations.…`` name a module docstring
gives must be a module, or a name a module holds.
"""

from __future__ import annotations

import ast
import bisect
import importlib
import io
import itertools
import json
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("model", "simulations", "tools", "bench", "tests", "examples")
TEXT_SUFFIXES = {".md", ".toml", ".ipynb", ".txt", ".sh", ".cfg"}


SKIPPED = {"out", "node_modules", "__pycache__"}  # and every hidden folder


def tracked(root: Path = ROOT) -> list[Path]:
    """The files git tracks (the pages and the code, never ``out/`` or the venv); outside a git
    checkout, every file but those under ``SKIPPED`` or hidden folders."""
    try:
        names = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        found = (p for p in root.rglob("*") if p.is_file())
        parts = ((p, p.relative_to(root).parts[:-1]) for p in found)
        return sorted(p for p, d in parts if not any(x in SKIPPED or x[0] == "." for x in d))
    return [root / n for n in names if n and (root / n).is_file()]


# --- headings and anchors, as GitHub renders them ---------------------------------------------


def heading_text(raw: str) -> str:
    """A heading's text as rendered: links reduced to their text, code and emphasis marks gone."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw.strip())
    text = re.sub(r"(?<!\w)[*_]+|[*_]+(?!\w)|`", "", text)
    return text.strip()


def slug(text: str) -> str:
    """GitHub's anchor for a heading's rendered text: lower case, every character but letters,
    digits, ``-``, ``_`` and spaces dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


@dataclass(frozen=True)
class Heading:
    text: str
    anchor: str


def headings(page: Path) -> list[Heading]:
    """The headings of a markdown page (code fences skipped), each with its anchor; a repeated
    anchor gets ``-1``, ``-2``… as on GitHub."""
    text = re.sub(r"^(```|~~~).*?^\1", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    found: list[Heading] = []
    seen: dict[str, int] = {}
    for raw in re.findall(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", text, flags=re.M):
        shown = heading_text(raw)
        base = slug(shown)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.append(Heading(shown, base if n == 0 else f"{base}-{n}"))
    return found


def fold(title: str) -> str:
    """A title as compared: markup gone, case folded, runs of space one space."""
    return " ".join(heading_text(title).casefold().split())


def titles(text: str) -> set[str]:
    """The names a heading may be cited by: the whole of it, or its head before ``: `` or
    `` — `` ("Pinned results" for "Pinned results: ``--expect FILE``")."""
    return {fold(text), *(fold(re.split(sep, text, maxsplit=1)[0]) for sep in (": ", " — "))}


# --- the pointers -----------------------------------------------------------------------------

# a page of ours: README(.md) not preceded by an owner/repo, docs/NAME.md, or NAME.md / guide-NAME
PAGE = r"(?<![\w/.-])(?P<page>README(?:\.md)?|docs/[\w.-]+?\.md|[\w-]+\.md|guide-[a-z-]+)(?![\w-])"
OWNER_REPO = re.compile(r"[\w.-]+/[\w.-]+'?s? $")  # "agentclientprotocol/acp-tck README": theirs
QUOTED = r"""(?:"(?P<dq>[^"\n]{1,120})"|'(?P<sq>[^'\n]{1,120})'|“(?P<cq>[^”\n]{1,120})”)"""
TITLE = re.compile(PAGE + r"(?:[,:] ?| )\(?" + QUOTED)
ANCHOR = re.compile(PAGE + r"#(?P<anchor>[\w-]+)")
NUMBERED = re.compile(PAGE + r",? ?§ ?(?P<number>\d+)(?!\d|\.\d)")


@dataclass(frozen=True)
class Pointer:
    where: str  # file:line, or the command whose help says it
    page: str  # as written
    title: str = ""
    anchor: str = ""
    number: str = ""

    def __str__(self) -> str:
        target = (
            f'"{self.title}"'
            if self.title
            else f"#{self.anchor}"
            if self.anchor
            else f"§{self.number}"
        )
        return f"{self.where}: {self.page} {target}"


def pointers(text: str, where: str, line: int = 1) -> Iterator[Pointer]:
    """The pointers to sections in one piece of text, starting at ``line`` of file ``where``.
    Line breaks and indentation read as one space, so a pointer wrapped across
    lines is found; each is reported at the line where it starts."""
    words = [(m.group(), text.count("\n", 0, m.start())) for m in re.finditer(r"\S+", text)]
    flat = " ".join(w for w, _ in words)
    starts = list(itertools.accumulate((len(w) + 1 for w, _ in words), initial=0))

    def at(m: re.Match[str]) -> str:
        return f"{where}:{line + words[bisect.bisect_right(starts, m.start()) - 1][1]}"

    for m in itertools.chain(TITLE.finditer(flat), ANCHOR.finditer(flat), NUMBERED.finditer(flat)):
        before = max(0, m.start() - 120)
        if m["page"].startswith("README") and OWNER_REPO.search(flat, before, m.start()):
            continue
        groups = m.groupdict()
        yield Pointer(
            at(m),
            m["page"],
            title=groups.get("dq") or groups.get("sq") or groups.get("cq") or "",
            anchor=groups.get("anchor") or "",
            number=groups.get("number") or "",
        )


def python_texts(path: Path) -> Iterator[tuple[int, str]]:
    """The string constants (docstrings and f-string parts included) and the comment blocks of
    a Python file, each with its first line; a run of comment lines is one text."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
    block: list[str] = []
    start = last = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if block and tok.start[0] == last + 1:
                block.append(tok.string.lstrip("#"))
            else:
                if block:
                    yield start, "\n".join(block)
                block, start = [tok.string.lstrip("#")], tok.start[0]
            last = tok.start[0]
    if block:
        yield start, "\n".join(block)


def file_pointers(path: Path, root: Path = ROOT) -> Iterator[Pointer]:
    name = str(path.relative_to(root))
    if path.suffix == ".py":
        for line, text in python_texts(path):
            yield from pointers(text, name, line)
    elif path.suffix == ".ipynb":  # the cells' sources and text outputs
        for n, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            texts = [cell.get("source", [])]
            texts += [o.get("text", []) for o in cell.get("outputs", [])]
            for t in texts:
                yield from pointers("".join(t), f"{name} cell {n}")
    else:  # comment marks at the start of a line (Makefile, TOML) are not part of the text
        text = re.sub(r"^[ \t]*#+", " ", path.read_text(encoding="utf-8"), flags=re.M)
        yield from pointers(text, name)


def code_and_pages(root: Path = ROOT) -> list[Path]:
    files = []
    for path in tracked(root):
        rel = path.relative_to(root)
        if path == Path(__file__).resolve():
            continue  # this file plants dangling pointers on purpose (below)
        is_code = path.suffix == ".py" and rel.parts[0] in CODE
        if is_code or path.suffix in TEXT_SUFFIXES or path.name == "Makefile":
            files.append(path)
    return files


# --- resolving --------------------------------------------------------------------------------


def our_pages(root: Path = ROOT) -> dict[str, Path]:
    """Every markdown page of the repository by the names a pointer may use for it."""
    pages: dict[str, Path] = {}
    for path in tracked(root):
        if path.suffix == ".md":
            rel = str(path.relative_to(root))
            pages[rel] = path
            pages.setdefault(path.name, path)
            if path.parent.name == "docs":
                pages.setdefault(path.stem, path)  # guide-spec-author
    pages["README"] = pages["README.md"] = root / "README.md"
    return pages


def dangling(found: list[Pointer], root: Path = ROOT) -> list[str]:
    """The pointers that do not land: a page that does not exist (``docs/…`` or ``README``), or
    a title, anchor or number no heading of the page has."""
    pages = our_pages(root)
    bad = []
    for p in found:
        page = pages.get(p.page)
        if page is None:
            if p.page.startswith("docs/"):
                bad.append(f"{p} (no such page)")
            continue  # a bare name that is not ours: somebody else's document
        heads = headings(page)
        if p.title and fold(p.title) not in {t for h in heads for t in titles(h.text)}:
            bad.append(f"{p} (no such heading)")
        elif p.anchor and p.anchor not in {h.anchor for h in heads}:
            bad.append(f"{p} (no such anchor)")
        elif p.number and not any(h.text.startswith(f"{p.number}. ") for h in heads):
            bad.append(f"{p} (no section numbered {p.number})")
    return bad


# --- what is shown and written at run time ----------------------------------------------------


def command_help() -> dict[str, str]:
    """The help of ``acp-sysprompt`` and of each of its commands, and of the reference agent."""
    from simulations.cli import main

    def shown(argv: list[str]) -> str:
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()), suppress(SystemExit):
            main(argv)
        return out.getvalue()

    top = shown(["--help"])
    listed = re.search(r"\{([\w,-]+)\}", top)
    assert listed, top
    helps = {"acp-sysprompt --help": top}
    helps |= {f"acp-sysprompt {c} --help": shown([c, "--help"]) for c in listed[1].split(",")}
    agent = [sys.executable, "-m", "simulations.agent", "--help"]
    helps["python -m simulations.agent --help"] = subprocess.run(
        agent, cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return helps


def written_report(out: Path) -> list[Path]:
    """The pages a check's report writes (``report.md``, each counterexample's ``review.md`` and
    ``steps.md``), on the tiny bound: two subjects and one mutant, a couple of seconds."""
    from simulations.outputs.report import SUBJECTS, build_report

    chosen = tuple(s for s in SUBJECTS if s.label in ("rfd-draft", "v1-stable, stable agent"))
    build_report(out, "tiny", chosen, mutants=("append_drops_base",))
    return sorted(out.rglob("*.md"))


# --- the tests --------------------------------------------------------------------------------


def test_every_pointer_in_the_code_and_the_pages_lands_on_a_heading() -> None:
    found = [p for f in code_and_pages() for p in file_pointers(f)]
    assert len(found) > 50, f"only {len(found)} pointers found: is the reader still reading?"
    bad = dangling(found)
    assert not bad, "\n".join(bad)


def test_every_pointer_in_the_help_lands_on_a_heading() -> None:
    helps = command_help()
    assert len(helps) > 10 and all(helps.values()), sorted(helps)
    found = [p for cmd, text in helps.items() for p in pointers(text, cmd)]
    bad = dangling(found)
    assert not bad, "\n".join(bad)


def test_every_pointer_in_a_written_report_lands_on_a_heading(tmp_path: Path) -> None:
    pages = written_report(tmp_path)
    assert tmp_path / "report.md" in pages and len(pages) > 2, pages
    found = [p for page in pages for p in file_pointers(page, tmp_path)]
    bad = dangling(found)
    assert not bad, "\n".join(bad)


def test_a_planted_dangling_pointer_is_caught_in_every_form(tmp_path: Path) -> None:
    code = tmp_path / "planted.py"
    code.write_text(
        '''"""A module.

Source
    README, "Two commands"; README, "No such section"; docs/cli.md "The other
    commands"; docs/nope.md "Anything"; agentclientprotocol/acp-tck README "Reading the
    report"; acp-session-digest.md §7; guide-spec-author §3; guide-spec-author §9.
"""

# the runnable blocks: docs/cli.md#runnable-blocks-in-the-docs, not
# docs/cli.md#runnable-blocks (a wrapped comment is one text)
HELP = "a profile (docs/profiles.md, 'An agent profile'; " "docs/profiles.md, 'A profil')"
''',
        encoding="utf-8",
    )
    page = tmp_path / "page.md"
    page.write_text(
        "See [the flags](docs/conform.md#tiers-pseudo-ids-and-the-verdict) and\n"
        'docs/conform.md, "Pinned results"; not docs/conform.md, "Pinned\n'
        'resultz".\n',
        encoding="utf-8",
    )
    found = [p for f in (code, page) for p in file_pointers(f, tmp_path)]
    assert len(found) == 14, [str(p) for p in found]  # the tck README is theirs
    assert dangling(found) == [
        'planted.py:4: README "No such section" (no such heading)',
        'planted.py:5: docs/nope.md "Anything" (no such page)',
        "planted.py:6: guide-spec-author §9 (no section numbered 9)",
        'planted.py:11: docs/profiles.md "A profil" (no such heading)',
        "planted.py:10: docs/cli.md #runnable-blocks (no such anchor)",
        'page.md:2: docs/conform.md "Pinned resultz" (no such heading)',
    ]


def test_anchors_follow_githubs_rules(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## `check --compare`: two designs side by side\n\n## Findings\n\n"
        "```sh\n# not a heading\n```\n\n## Findings\n\n### T13 FAIL — **bold** [a link](x.md)\n"
        "## 5. A proposal that changes the wire\n",
        encoding="utf-8",
    )
    assert [h.anchor for h in headings(page)] == [
        "title",
        "check---compare-two-designs-side-by-side",
        "findings",
        "findings-1",
        "t13-fail--bold-a-link",
        "5-a-proposal-that-changes-the-wire",
    ]
    assert titles("Pinned results: `--expect FILE`") == {
        "pinned results: --expect file",
        "pinned results",
    }


# --- module docstrings name what exists -------------------------------------------------------

DOTTED = re.compile(r"``((?:model|simulations)(?:\.\w+)+)(?:\(\))?``")


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the project, or a name some module of it holds."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def unresolved(paths: list[Path], root: Path = ROOT) -> list[str]:
    """The ``model.…``/``simulations.…`` names the module docstrings of ``paths`` give that
    name no module or attribute."""
    bad = []
    for path in paths:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        for name in sorted(set(DOTTED.findall(doc))):
            if not resolves(name):
                bad.append(f"{path.relative_to(root)}: ``{name}``")
    return bad


def test_every_module_a_module_docstring_names_exists(tmp_path: Path) -> None:
    modules = [p for p in tracked() if p.suffix == ".py" and p.parts[len(ROOT.parts)] in CODE]
    assert len(modules) > 100
    assert unresolved(modules) == []
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""Uses ``model.spec.P_IDS`` and ``simulations.outputs.forms``, not\n'
        '``simulations.api.compare`` or ``model.nowhere``."""\n',
        encoding="utf-8",
    )
    assert unresolved([planted], tmp_path) == [
        "planted.py: ``model.nowhere``",
        "planted.py: ``simulations.api.compare``",
    ]
