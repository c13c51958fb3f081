"""What a system slot means, read from a model call: the client's texts and the agent's own
text (``BASE``), in slot order.

Scope
    ``symbols`` reads a slot as the model writes one: each client text where it occurs (by
    containment), and ``BASE`` where the agent's own text is, in the order they stand.
    ``BaseText`` learns the agent's own text from the slots of sessions the client gave no
    prompt (the lines every such slot has, ``_lines``) and says where it stands in a slot.

Abstractions
    A slot is never read by equality of the whole: real slots carry per-request header lines
    and identity lines. A line of at least ``_LINE_MIN`` characters marks the agent's own
    text (every line that is not blank, in a text that has none that long); a slot holds
    ``BASE`` where at least half the learnt lines are in it, and until a slot is learnt
    ``BASE`` is never found. An empty client text is never looked for.

Source
    The slots are those the recording model endpoint keeps (``simulations.live.endpoint``,
    ``ModelCall.slot_text``); ``BASE``: ``model.types``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from model.types import BASE

_LINE_MIN = 16  # characters of a line worth keeping as a mark of the agent's own text


def _lines(text: str) -> list[str]:
    """The lines of ``text`` that mark it: those of at least ``_LINE_MIN`` characters, or, in
    a text that has none, every line that is not blank."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    long = [line for line in lines if len(line) >= _LINE_MIN]
    return long or lines


@dataclass
class BaseText:
    """The agent's own text, learnt from slots that carry no client text: the lines (of at
    least ``_LINE_MIN`` characters) every such slot has. A slot holds BASE where at least half
    of them are in it; its place is the first of them found."""

    lines: frozenset[str] | None = None
    samples: int = 0  # slots learnt from

    def learn(self, slot: str, client_texts: Iterable[str] = ()) -> None:
        self.samples += 1
        for t in client_texts:
            if t:
                slot = slot.replace(t, "\n")
        seen = frozenset(_lines(slot))
        self.lines = seen if self.lines is None else self.lines & seen

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


def symbols(slot: str, texts: Mapping[str, str], base: BaseText) -> tuple[str, ...]:
    """The slot as the model writes one: each client text (``texts``: symbol → the text sent
    for it) where it occurs, and ``BASE`` where the agent's own text is, in slot order. An
    empty text is never looked for (it cannot be told apart)."""
    found: list[tuple[int, str]] = []
    for sym, text in texts.items():
        if not text:
            continue
        start = 0
        while (i := slot.find(text, start)) >= 0:
            found.append((i, sym))
            start = i + len(text)
    at = base.place(slot)
    if at is not None:
        found.append((at, BASE))
    return tuple(sym for _, sym in sorted(found))
