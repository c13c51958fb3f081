"""What a system slot means, read from a model call: the client's texts and the agent's own
text (``BASE``), in slot order; and, of the agent's own text, its built-in instructions told
from the context it supplies from the workspace or environment.

Scope
    ``symbols`` reads a slot as the model writes one: each client text where it occurs (by
    containment), and ``BASE`` where the agent's own text is, in the order they stand.
    ``BaseText`` learns the agent's own text from the slots of sessions the client gave no
    prompt (the lines every such slot has, ``_lines``) and says where it stands in a slot. It
    also learns which of those lines are context (``BaseText.context``): sessions opened in
    two working directories show which lines change with the directory, and the section each
    sits in is context, with the lines that hold the day's date or the platform; the rest are
    its instructions (``BaseText.instructions``). ``BaseText.kept`` says which of each a slot
    kept, and ``symbols(…, instructions_only=True)`` reads ``BASE`` from the instructions
    alone: what T13 (override) forbids is the agent's built-in instructions, not context.
    Of the instruction lines a slot kept, ``Kept.mandated`` are those a model provider
    requires (``simulations.live.endpoint.provider_lines``: the line, who requires it, the
    source), reported apart from the agent's own (``Kept.own``); they still count as kept
    (T13 as written makes no exception). ``outside_slot`` names the client texts that missed
    the system slot but reached the model in a user-role message (``ModelCall.outside``).

Abstractions
    A slot is never read by equality of the whole: real slots carry per-request header lines
    and identity lines. A line of at least ``_LINE_MIN`` characters marks the agent's own
    text (every line that is not blank, in a text that has none that long); a slot holds
    ``BASE`` where at least half the learnt lines are in it, and until a slot is learnt
    ``BASE`` is never found. An empty client text is never looked for. A line shaped as an
    HTTP header named ``x-…`` (``x-anthropic-billing-header: cc_version=…; cc_entrypoint=…;``,
    which Claude Code puts first in its slot for the API server to read: a version, an entry
    point and a hash of the first user message) is request metadata, not text: never learnt as
    the agent's own, so never an instruction T13 could find kept (``_is_header``).

    A line changes with the environment where it holds the session's working directory (or
    its last part), the day's date or the platform (``_holds_value``), or where it stands in
    every slot learnt in one directory and in none learnt in another (a line that changes
    from one request to the next, a header's, is in neither). A section is a markdown
    heading and the lines up to the next heading, or a line that is an XML-like tag
    (``<env>``) up to its closing tag, inside one piece of the slot (code fences are no
    sections); the innermost holds a line. A section holding a line that changes is context,
    all of it; a learnt line that stands outside every such section, in any slot learnt, is
    an instruction. Lines no learnt slot had (this test's directory, say) are neither: no
    slot showed them as the agent's own.

Source
    The slots are those the recording model endpoint keeps
    (``simulations.live.endpoint.model_calls``: ``ModelCall.slot_text`` and its pieces
    ``ModelCall.system``); ``BASE``: ``model.types``.
    T13: "context the Agent supplies from the workspace or environment" may stay under
    override, the agent's own instructions may not (ACP v1 as stabilised; ``model/spec.py``).
"""

from __future__ import annotations

import bisect
import datetime
import os
import platform
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from model.types import BASE
from simulations.live.endpoint.provider_lines import MandatedLine, mandated

_LINE_MIN = 16  # characters of a line worth keeping as a mark of the agent's own text
_SAMPLES_KEPT = 8  # slots kept to learn context from (calibration sends three)
QUOTED_LINES = 10  # kept instruction lines a finding quotes, at most
QUOTED_CHARS = 200  # characters of each
_HEADING = re.compile(r" {0,3}#{1,6}\s+\S")
_OPEN_TAG = re.compile(r"<([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>")
_CLOSE_TAG = re.compile(r"</([A-Za-z][\w.:-]*)\s*>")
_FENCE = re.compile(r"\s*(```|~~~)")
# "x-anthropic-billing-header: cc_version=2.1.318.4a3; cc_entrypoint=sdk-ts;": metadata for the
# API server in the slot (a name of the x- kind, a colon, then values separated by semicolons)
_HEADER_LINE = re.compile(r"x-[a-z0-9]+(?:-[a-z0-9]+)*:\s*[^\s;]+=[^;]*;", re.I)
# "Platform: linux", "- OS Version: Linux 6.8": a line that names the platform as a value
_PLATFORM_KEY = re.compile(r"[-*\s]*(platform|os|os version|operating system)\s*:\s*\S", re.I)


def _is_header(line: str) -> bool:
    """``line`` (stripped) is request metadata shaped as an HTTP header named ``x-…``."""
    return _HEADER_LINE.match(line) is not None


def _lines(text: str) -> list[str]:
    """The lines of ``text`` that mark it: those of at least ``_LINE_MIN`` characters, or, in
    a text that has none, every line that is not blank; header lines (``_is_header``) never."""
    lines = [s for line in text.splitlines() if (s := line.strip()) and not _is_header(s)]
    long = [line for line in lines if len(line) >= _LINE_MIN]
    return long or lines


def _dates() -> tuple[str, ...]:
    """Today's date (yesterday's and tomorrow's too: the agent's clock may be in another zone)
    as agents write it: ISO, US, long and JavaScript's ``toDateString``."""
    today = datetime.date.today()
    out: list[str] = []
    for d in (today - datetime.timedelta(days=1), today, today + datetime.timedelta(days=1)):
        out += [
            d.isoformat(),
            f"{d.year}/{d.month:02}/{d.day:02}",
            f"{d.month}/{d.day}/{d.year}",
            f"{d.month:02}/{d.day:02}/{d.year}",
            f"{d:%B} {d.day}, {d.year}",
            f"{d.day} {d:%B} {d.year}",
            f"{d:%a %b %d %Y}",
        ]
    return tuple(out)


def _values(cwd: str | None) -> re.Pattern[str]:
    """What a line that changes with the environment holds, as one pattern: the working
    directory (or its last part, where that is six characters or more), the day's date, the
    kernel release."""
    values = list(_dates())
    if cwd:
        leaf = os.path.basename(cwd.rstrip("/"))
        values += [cwd] + ([leaf] if len(leaf) >= 6 else [])
    release = platform.release()
    if len(release) >= 4:
        values.append(release)
    return re.compile("|".join(re.escape(v) for v in sorted(set(values), key=len, reverse=True)))


def _holds_value(line: str, values: re.Pattern[str]) -> bool:
    """``line`` holds what changes with the environment (``_values``), or names the platform
    as a value (``Platform: linux``)."""
    return values.search(line) is not None or _PLATFORM_KEY.match(line) is not None


def _sections(rows: Sequence[str]) -> list[int | None]:
    """For each row of one piece of a slot, the row its innermost section starts at (None: in
    none): a markdown heading up to the next one, an XML-like tag line up to its closing tag;
    rows inside a code fence open none."""
    fenced, heads, opens = False, [], []
    closes: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if _FENCE.match(row):
            fenced = not fenced
            continue
        if fenced:
            continue
        stripped = row.strip()
        if _HEADING.match(row):
            heads.append(i)
        elif (m := _OPEN_TAG.fullmatch(stripped)) is not None:
            opens.append((i, m.group(1)))
        elif (m := _CLOSE_TAG.fullmatch(stripped)) is not None:
            closes.setdefault(m.group(1), []).append(i)
    spans: list[tuple[int, int]] = []  # (start, end inclusive) of each tag's section
    for i, name in opens:
        after = closes.get(name, [])
        k = bisect.bisect_right(after, i)
        if k < len(after):
            spans.append((i, after[k]))
    out: list[int | None] = []
    head: int | None = None
    stack: list[tuple[int, int]] = []
    spans_at = {start: end for start, end in spans}
    heading_rows = set(heads)
    for i in range(len(rows)):
        if i in heading_rows:
            head = i
        if i in spans_at:
            stack.append((i, spans_at[i]))
        while stack and stack[-1][1] < i:
            stack.pop()
        tag = stack[-1][0] if stack else None
        out.append(head if tag is None else tag if head is None else max(head, tag))
    return out


def _classify(
    seen: Sequence[tuple[str | None, tuple[str, ...]]], learnt: frozenset[str]
) -> tuple[frozenset[str], tuple[str, ...]]:
    """Of the ``learnt`` lines, those that are context, and the headings of the context
    sections (in the order first seen), from the slots ``seen`` (working directory, pieces):
    see the module's Abstractions. Linear in the slots' rows."""
    values = {c: _values(c) for c, _ in seen}
    cwds = {c for c, _ in seen if c is not None}
    rows_of = [(c, [p.splitlines() for p in pieces]) for c, pieces in seen]
    sets = [{r.strip() for rows in piece_rows for r in rows} for _, piece_rows in rows_of]
    siblings = [  # each slot's: those learnt in its directory, and in another
        (
            [j for j, (c, _) in enumerate(seen) if c == cwd and j != k],
            [j for j, (c, _) in enumerate(seen) if c is not None and c != cwd],
        )
        for k, (cwd, _) in enumerate(seen)
    ]

    def moves(line: str, k: int, cwd: str | None) -> bool:
        if _holds_value(line, values[cwd]):
            return True
        if cwd is None or len(cwds) < 2:
            return False
        same, other = siblings[k]
        return (
            bool(same)
            and all(line in sets[j] for j in same)
            and not any(line in sets[j] for j in other)
        )

    marked: dict[str, None] = {}  # headings of context sections, in order of first sight
    layout = []
    for k, (cwd, piece_rows) in enumerate(rows_of):
        for rows in piece_rows:
            starts = _sections(rows)
            layout.append((cwd, rows, starts))
            for row, start in zip(rows, starts, strict=True):
                if start is None:
                    continue
                heading = rows[start].strip()
                line = row.strip()
                if heading not in marked and line and moves(line, k, cwd):
                    marked[heading] = None
    inside: set[str] = set()
    outside: set[str] = set()
    for cwd, rows, starts in layout:
        for row, start in zip(rows, starts, strict=True):
            line = row.strip()
            if line not in learnt:
                continue
            if (start is not None and rows[start].strip() in marked) or _holds_value(
                line, values[cwd]
            ):
                inside.add(line)
            else:
                outside.add(line)
    return frozenset(learnt & (inside - outside)), tuple(marked)


@dataclass(frozen=True)
class Kept:
    """What a slot kept of the agent's own text: the lines of its instructions (slot order),
    where the first stands, and how many lines of its context; of those instruction lines,
    the ones a model provider requires (``mandated``: ``provider_lines``), which ``own``
    leaves out."""

    instructions: tuple[str, ...] = ()
    at: int | None = None
    context: int = 0

    @property
    def mandated(self) -> tuple[MandatedLine, ...]:
        """The kept instruction lines a model provider requires, with their sources."""
        return tuple(m for line in self.instructions if (m := mandated(line)) is not None)

    @property
    def own(self) -> tuple[str, ...]:
        """The kept instruction lines no provider requires: the agent's own choice."""
        return tuple(line for line in self.instructions if mandated(line) is None)

    def quoted(self) -> list[str]:
        """The kept instruction lines as a finding quotes them: at most ``QUOTED_LINES``, each
        clipped to ``QUOTED_CHARS`` characters."""
        return [
            line if len(line) <= QUOTED_CHARS else line[: QUOTED_CHARS - 1] + "…"
            for line in self.instructions[:QUOTED_LINES]
        ]


@dataclass
class BaseText:
    """The agent's own text, learnt from slots that carry no client text: the lines (of at
    least ``_LINE_MIN`` characters) every such slot has. A slot holds BASE where at least half
    of them are in it; its place is the first of them found. Of those lines, ``context`` are
    the agent's context (learnt from slots of two working directories: the sections whose
    lines change with it, ``context_sections``), the rest its instructions."""

    lines: frozenset[str] | None = None
    samples: int = 0  # slots learnt from
    # (working directory, pieces) of the first ``_SAMPLES_KEPT`` slots learnt
    _seen: list[tuple[str | None, tuple[str, ...]]] = field(default_factory=list, repr=False)
    _classified: tuple[frozenset[str], tuple[str, ...]] | None = field(default=None, repr=False)

    def learn(
        self, slot: str | Sequence[str], client_texts: Iterable[str] = (), cwd: str | None = None
    ) -> None:
        """Learn from one slot (its text, or its pieces: a section ends with its piece) of a
        session in working directory ``cwd``."""
        self.samples += 1
        pieces = [slot] if isinstance(slot, str) else list(slot)
        texts = [t for t in client_texts if t]
        for t in texts:
            pieces = [p.replace(t, "\n") for p in pieces]
        seen = frozenset(_lines("\n".join(pieces)))
        self.lines = seen if self.lines is None else self.lines & seen
        if len(self._seen) < _SAMPLES_KEPT:
            self._seen.append((cwd, tuple(pieces)))
        self._classified = None

    @property
    def cwds(self) -> int:
        """How many working directories the learnt slots came from."""
        return len({c for c, _ in self._seen if c is not None})

    @property
    def context(self) -> frozenset[str]:
        """The learnt lines that are context the agent supplies from its environment."""
        if self._classified is None:
            self._classified = _classify(self._seen, self.lines or frozenset())
        return self._classified[0]

    @property
    def context_sections(self) -> tuple[str, ...]:
        """The headings of the sections learnt as context, in the order first seen."""
        if self._classified is None:
            self._classified = _classify(self._seen, self.lines or frozenset())
        return self._classified[1]

    @property
    def instructions(self) -> frozenset[str]:
        """The learnt lines that are not context: the agent's built-in instructions."""
        return (self.lines or frozenset()) - self.context

    @property
    def known(self) -> bool:
        """Learnt: from at least one slot (an agent whose slot was empty has no own text, and
        BASE is then never found)."""
        return self.samples > 0

    def share(self, slot: str) -> tuple[int, int]:
        """How many of the learnt lines ``slot`` holds, of how many (the evidence for BASE)."""
        lines = self.lines or frozenset()
        return sum(1 for line in lines if line in slot), len(lines)

    def place(self, slot: str) -> int | None:
        """Where BASE starts in ``slot`` (None: not there, or nothing learnt)."""
        if not self.lines:
            return None
        found = [i for line in self.lines if (i := slot.find(line)) >= 0]
        return min(found) if 2 * len(found) >= len(self.lines) else None

    def kept(self, slot: str, client_texts: Iterable[str] = ()) -> Kept:
        """What ``slot`` kept of the agent's own text, outside the client's texts: each line
        of its instructions (in slot order), and how many lines of its context."""
        spans = _Spans(
            sorted(
                (i, i + len(t))
                for t in {t for t in client_texts if t}
                for i in _occurrences(slot, t)
            )
        )
        found: list[tuple[int, str]] = []
        for line in self.instructions:
            at = _outside(slot, line, spans)
            if at is not None:
                found.append((at, line))
        found.sort()
        context = sum(1 for line in self.context if _outside(slot, line, spans) is not None)
        return Kept(tuple(line for _, line in found), found[0][0] if found else None, context)

    def allowed(self) -> str:
        """What is allowed as context, in words (for a finding)."""
        total = len(self.lines or ())
        if not self.context:
            return f"none of its {total} lines is context"
        shown = [h if len(h) <= 60 else h[:59] + "…" for h in self.context_sections[:5]]
        more = len(self.context_sections) - len(shown)
        where = ", ".join(repr(h) for h in shown) + (f" and {more} more" if more else "")
        return f"{len(self.context)} of its {total} lines are context: " + (
            f"the sections {where}" if shown else "lines holding the date or the platform"
        )


def _occurrences(text: str, part: str) -> list[int]:
    found, start = [], 0
    while (i := text.find(part, start)) >= 0:
        found.append(i)
        start = i + len(part)
    return found


class _Spans:
    """Spans of a text (the client's texts in a slot), sorted by start: whether a stretch
    overlaps one, in logarithmic time."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        self.starts = [s for s, _ in spans]
        self.reach: list[int] = []  # the furthest end among the spans up to each
        for _, end in spans:
            self.reach.append(max(end, self.reach[-1]) if self.reach else end)

    def overlap(self, start: int, end: int) -> bool:
        k = bisect.bisect_left(self.starts, end)  # the spans that start before ``end``
        return k > 0 and self.reach[k - 1] > start


def _outside(slot: str, line: str, spans: _Spans) -> int | None:
    """The first place ``line`` stands in ``slot`` outside every span (a client's text)."""
    start = 0
    while (i := slot.find(line, start)) >= 0:
        if not spans.overlap(i, i + len(line)):
            return i
        start = i + len(line)
    return None


def outside_slot(outside: str, texts: Mapping[str, str], slot: str) -> tuple[str, ...]:
    """The client texts (``texts``: symbol → text) that are not in the system ``slot`` but
    reached the model in ``outside`` (the call's user-role messages: ``ModelCall.outside``),
    in ``texts``' order; an empty text is never looked for."""
    return tuple(s for s, t in texts.items() if t and t not in slot and t in outside)


def symbols(
    slot: str, texts: Mapping[str, str], base: BaseText, *, instructions_only: bool = False
) -> tuple[str, ...]:
    """The slot as the model writes one: each client text (``texts``: symbol → the text sent
    for it) where it occurs, and ``BASE`` where the agent's own text is, in slot order. An
    empty text is never looked for (it cannot be told apart). With ``instructions_only``
    (where the model's slot has no BASE: override), BASE stands where the first line of the
    agent's built-in instructions the slot kept does, however few; its context is allowed."""
    found: list[tuple[int, str]] = []
    for sym, text in texts.items():
        if not text:
            continue
        found += [(i, sym) for i in _occurrences(slot, text)]
    if instructions_only:
        at = base.kept(slot, texts.values()).at if base.lines else None
    else:
        at = base.place(slot)
    if at is not None:
        found.append((at, BASE))
    return tuple(sym for _, sym in sorted(found))
