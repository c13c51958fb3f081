"""Reading the files a user hands the tool (profiles, clients, bounds, amendments), safely.

Scope
    ``read_text`` reads a file of at most ``MAX_BYTES`` (it reads no more than one byte past
    the limit, so ``/dev/zero`` or a FIFO that never ends costs the limit, not the machine)
    and decodes it as UTF-8; ``parse_toml`` and ``parse_json`` parse that text and refuse a
    document nested deeper than ``MAX_DEPTH``. Each failure is one ``InputError`` line naming
    the file and, where there is one, the line: too big, not UTF-8 (a UTF-16 or UTF-32
    byte-order mark is named as such), not valid TOML/JSON, a JSON object naming a key twice,
    nested too deeply. ``read_named`` is the one way a loader that takes "a shipped name or a
    file" reads the file, with one form of error: not a shipped name nor a file of the kinds
    it reads, cannot be read (the system's reason), not a regular file (a folder, a FIFO that
    would block, a device: refused before it is opened), empty, or any of the above. The
    loaders (``model.profiles``, ``model.amend``, ``simulations.engines.bounds``,
    ``simulations.compare``) turn the ``InputError`` into their own error class; the live
    kit's recipes (``simulations.live.recipes.recipes``) read theirs alike.

Abstractions
    What a file says is echoed back in error messages only through ``shown`` (a repr cut at
    ``SHOWN`` characters with "…"), and a misspelt word gets a "did you mean" suggestion only
    when it is short (``close_match``): difflib over a long key costs memory and time out of
    all proportion to a typo.

Source
    Ours.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
import tomllib
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "SHOWN",
    "InputError",
    "check_depth",
    "clipped",
    "close_match",
    "parse_json",
    "parse_toml",
    "printable",
    "read_named",
    "read_text",
    "shown",
    "shown_json",
]

MAX_BYTES = 1 << 20  # 1 MiB: the shipped files are a few KiB
MAX_DEPTH = 32  # tables and arrays inside each other; the formats need 4
SHOWN = 60  # characters of a value echoed in an error message
SUGGEST = 40  # longest word a "did you mean" is looked for


class InputError(ValueError):
    """A file that cannot be read as a document: one line naming the file (and line)."""


def shown(value: object, limit: int = SHOWN) -> str:
    """``repr(value)``, cut to ``limit`` characters with "…" when longer."""
    text = repr(value[: limit + 1] if isinstance(value, str) else value)
    return text if len(text) <= limit else text[:limit] + "…"


def clipped(text: str, limit: int = SHOWN) -> str:
    """``text`` itself (no quotes), cut to ``limit`` characters with "…" when longer."""
    return text if len(text) <= limit else text[:limit] + "…"


def printable(text: object, limit: int | None = SHOWN) -> str:
    """``text`` as a terminal may print it: no quotes, every character a terminal acts on
    (control characters such as ESC, lone surrogates, other unprintable ones) escaped as
    ``repr`` escapes it, cut to ``limit`` characters with "…" when longer (None: never cut).
    For names a user chose (a bound's, a profile's, an amendment's, a recipe's): the loaders
    keep a name so (``limit`` None), so every line that prints it is safe."""
    s = str(text)
    cut = s if limit is None else s[: limit + 1]
    if not cut.isprintable():
        cut = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    if limit is None or (len(cut) <= limit and len(s) <= limit):
        return cut
    return cut[:limit] + "…"


def shown_json(value: object, limit: int = SHOWN) -> str:
    """``json.dumps(value)``, cut like ``shown`` (for messages that quote values as JSON)."""
    try:
        text = json.dumps(value[: limit + 1] if isinstance(value, str) else value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def close_match(word: object, choices: Iterable[str]) -> str | None:
    """The choice closest to a misspelt ``word``, or None (also for a long or non-text word)."""
    import difflib

    if not isinstance(word, str) or len(word) > SUGGEST:
        return None
    near = difflib.get_close_matches(word, list(choices), n=1)
    return near[0] if near else None


def _size(n: int) -> str:
    return f"{n // (1 << 20)} MiB" if n % (1 << 20) == 0 else f"{n:,} bytes"


def read_text(path: Path, name: str, limit: int | None = None) -> str:
    """The UTF-8 text of the file at ``path`` (``name`` in messages); ``InputError`` if it is
    bigger than ``limit`` (default ``MAX_BYTES``) or not UTF-8. ``OSError`` passes through
    (the caller says "cannot read")."""
    limit = MAX_BYTES if limit is None else limit
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{name}: larger than the limit of {_size(limit)} for this file")
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "UTF-32"),  # before UTF-16: it starts with the same two bytes
        (codecs.BOM_UTF32_BE, "UTF-32"),
        (codecs.BOM_UTF16_LE, "UTF-16"),
        (codecs.BOM_UTF16_BE, "UTF-16"),
        (codecs.BOM_UTF8, "UTF-8 with a byte-order mark"),
    ):
        if data.startswith(bom):
            raise InputError(
                f"{name}: encoded as {encoding}; save it as UTF-8 (no byte-order mark)"
            )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(
            f"{name}: line {line}: not UTF-8 (byte 0x{data[e.start]:02x} at column {column}); "
            "save it as UTF-8"
        ) from None


def _depth(value: object) -> int:
    """How deep tables and arrays nest in ``value`` (iteratively: no recursion limit)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d + 1)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d + 1)
            stack.extend((x, d + 1) for x in v)
    return deepest


def _too_deep(name: str) -> InputError:
    return InputError(f"{name}: nested too deeply (at most {MAX_DEPTH} tables or arrays deep)")


def check_depth(data: object, name: str) -> None:
    """``InputError`` naming ``name`` if ``data`` (a parsed document) nests deeper than
    ``MAX_DEPTH``."""
    if _depth(data) > MAX_DEPTH:
        raise _too_deep(name)


def _parse(
    loads: Callable[[str], Any], bad: type[Exception], kind: str, text: str, name: str
) -> Any:
    try:
        data = loads(text)
    except bad as e:
        raise InputError(f"{name}: not valid {kind}: {e}") from None
    except RecursionError:
        raise _too_deep(name) from None
    check_depth(data, name)
    return data


def parse_toml(text: str, name: str) -> dict[str, Any]:
    """``tomllib.loads(text)``; ``InputError`` naming ``name`` (and tomllib's line and
    column) if it is not valid TOML or nests deeper than ``MAX_DEPTH``."""
    data: dict[str, Any] = _parse(tomllib.loads, tomllib.TOMLDecodeError, "TOML", text, name)
    return data


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (``json.loads`` keeps the last silently)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


def parse_json(text: str, name: str) -> Any:
    """``json.loads(text)``; ``InputError`` as ``parse_toml``, and for an object that names a
    key twice (TOML refuses that itself)."""
    loads = partial(json.loads, object_pairs_hook=_unique)
    try:
        return _parse(loads, json.JSONDecodeError, "JSON", text, name)
    except _DuplicateKey as e:
        raise InputError(f"{name}: duplicate key {shown(e.key)}") from None


def read_named(
    spec: str,
    shipped: Iterable[str],
    what: str,
    suffixes: tuple[str, ...] = (".toml",),
    empty: str = "",
) -> Any:
    """The parsed document (TOML, or JSON for a ``.json`` suffix) of the file ``spec`` names,
    for a loader that first looks ``spec`` up among its ``shipped`` names (``what`` they
    are: "profile", "bound"). ``InputError``, one line, where ``spec`` has none of
    ``suffixes``, cannot be read, is no regular file, is empty (``empty``: how to start
    one), or ``read_text`` or the parser refuses it."""
    path = Path(spec)
    if path.suffix not in suffixes:
        kinds = " or ".join(suffixes)
        raise InputError(
            f"{shown(spec)} is neither a shipped {what} ({', '.join(shipped)}) nor a {kinds} file"
        )
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):  # a FIFO would block until a writer came, a device never end
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, a device or a socket"
            raise InputError(f"{shown(spec)}: not a regular file ({kind})")
        text = read_text(path, spec)
    except OSError as e:
        raise InputError(f"cannot read {shown(spec)}: {e.strerror or type(e).__name__}") from None
    if not text.strip():
        raise InputError(f"{spec}: empty file" + (f" ({empty})" if empty else ""))
    return (parse_json if path.suffix == ".json" else parse_toml)(text, spec)
