"""The vendored ACP schemas match simulations/wire/schemas/VENDORED.md, file by file."""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files
from importlib.resources.abc import Traversable

import pytest

from simulations.wire.schema import SCHEMA_FILES

ROW = re.compile(r"^\|\s*`(?P<file>[^`]+)`\s*\|.*\|\s*`(?P<sha>[^`]*)`\s*\|\s*$")
SHA256 = re.compile(r"[0-9a-f]{64}")


def vendored() -> Traversable:
    return files("simulations.wire") / "schemas"


def _at(root: Traversable, name: str) -> Traversable:
    for part in name.split("/"):
        root = root / part
    return root


def listed(text: str) -> dict[str, str]:
    """file → sha256, one per table row of VENDORED.md whose first cell is a `file`."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m is None:
            continue
        name, sha = m["file"], m["sha"]
        if not SHA256.fullmatch(sha):
            raise ValueError(f"{name}: {sha!r} is not a lowercase hex sha256")
        if name in out:
            raise ValueError(f"{name}: listed twice")
        out[name] = sha
    return out


def json_files(root: Traversable, prefix: str = "") -> set[str]:
    """Every ``.json`` file under ``root``, as a path relative to it."""
    out: set[str] = set()
    for entry in root.iterdir():
        if entry.is_dir():
            out |= json_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".json"):
            out.add(prefix + entry.name)
    return out


def problems(root: Traversable, text: str) -> list[str]:
    """Where ``root``'s files and the listing ``text`` disagree (empty: they agree)."""
    table = listed(text)
    out: list[str] = []
    for name, sha in sorted(table.items()):
        f = _at(root, name)
        if not f.is_file():
            out.append(f"{name}: listed but missing")
            continue
        actual = hashlib.sha256(f.read_bytes()).hexdigest()
        if actual != sha:
            out.append(f"{name}: sha256 mismatch: listed {sha}, file has {actual}")
    out += [f"{name}: not listed" for name in sorted(json_files(root) - table.keys())]
    return out


def _doc() -> str:
    return vendored().joinpath("VENDORED.md").read_text(encoding="utf-8")


def test_every_listed_file_is_vendored_with_its_sha256() -> None:
    table = listed(_doc())
    assert len(table) == 5  # four vendored, one our own (alt-session-instructions.json)
    assert problems(vendored(), _doc()) == []


def test_every_vendored_json_file_is_listed() -> None:
    assert json_files(vendored()) == set(listed(_doc()))


def test_every_schema_render_reads_is_vendored_and_listed() -> None:
    assert set(SCHEMA_FILES.values()) <= set(listed(_doc()))


# ---- the checker has teeth -------------------------------------------------------------------


def _one_row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| `{name}`"))


def test_a_wrong_hash_is_reported_as_a_mismatch() -> None:
    text = _doc()
    row = _one_row(text, "acp-schema-v1.json")
    sha = listed(row)["acp-schema-v1.json"]
    wrong = f"{int(sha[0], 16) ^ 1:x}" + sha[1:]
    found = problems(vendored(), text.replace(row, row.replace(sha, wrong)))
    assert found == [f"acp-schema-v1.json: sha256 mismatch: listed {wrong}, file has {sha}"]


def test_a_missing_and_an_unlisted_file_are_reported() -> None:
    text = _doc()
    row = _one_row(text, "sdk-2.4.0/acp-schema-v2.unstable.json")
    ghost = row.replace("acp-schema-v2.unstable.json", "acp-schema-v3.unstable.json")
    found = problems(vendored(), text.replace(row, ghost))
    assert found == [
        "sdk-2.4.0/acp-schema-v3.unstable.json: listed but missing",
        "sdk-2.4.0/acp-schema-v2.unstable.json: not listed",
    ]


@pytest.mark.parametrize(
    "row",
    [
        "| `a.json` | x | y | Apache-2.0 | `" + "A" * 64 + "` |",  # uppercase
        "| `a.json` | x | y | Apache-2.0 | `" + "a" * 63 + "` |",  # too short
        "| `a.json` | x | y | Apache-2.0 | `` |",  # empty
    ],
)
def test_the_parser_refuses_a_malformed_hash(row: str) -> None:
    with pytest.raises(ValueError, match="not a lowercase hex sha256"):
        listed(row)


def test_the_parser_refuses_a_file_listed_twice() -> None:
    row = _one_row(_doc(), "acp-schema-v1.json")
    with pytest.raises(ValueError, match="listed twice"):
        listed(row + "\n" + row)
