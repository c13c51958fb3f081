"""One counterexample as a Mermaid sequence diagram: sequence.mmd, and the one review.md shows.

Scope
    ``mermaid`` draws a ``Trace`` run under some tables as a ``sequenceDiagram``: one arrow per
    sent request and one per reply, a note where a client declines to send, where the agent
    starts or restarts and what it advertises, where the requirement is first violated and,
    for a mutant's counterexample that goes on with its observing epilogue, where the
    counterexample ends. ``simulations.outputs.forms.write_counterexample`` writes it as
    sequence.mmd; the pasted blocks (``simulations.outputs.paste.paste_body``: review.md, the
    report's upstream blocks) show it inline. ``first_violation``: the step after which an id
    is first violated, which the diagram and review.md's verdict both name.

Abstractions
    A request's connection is its participant (``c0``; ``c0r1`` after the first restart), so
    its label leaves ``conn=`` out; the agent is the participant ``A`` (shown as "Agent").
    Connect and restart are events in the agent's environment, not JSON-RPC messages: they
    are notes, not arrows; a connect names its client's kind where it is not a conforming
    one. Labels use the wire's field shapes (``simulations.wire.acp.request_label``); ``;``
    and ``#`` are escaped, as they would end or escape a Mermaid line. The lines are short
    (no indent, the one-letter ``A``): review.md shows the diagram inline and is pasted whole
    into a review, at most 2,000 characters (``simulations.outputs.paste``).

Source
    Mermaid sequence diagrams: https://mermaid.js.org/syntax/sequenceDiagram.html.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import replace

from model.tables import Tables
from model.types import Caps, ClientKind, PromptCap
from simulations.engines.trace import ReplayedStep, Trace, replay, reply_text
from simulations.wire.acp import V2_WIRE, request_label

__all__ = ["first_violation", "mermaid"]


def first_violation(steps: list[ReplayedStep], rid: str) -> int | None:
    """1-based index of the first step after which ``rid`` is violated."""
    return next((i for i, r in enumerate(steps, 1) if rid in r.violated), None)


def _mm(text: str) -> str:
    """Mermaid message text: ``;`` and ``#`` would end or escape the line."""
    return text.replace("#", "#35;").replace(";", "#59;")


_CONN = re.compile(r"\(conn=\d+(, )?")


def _participant(epoch: int, conn: int) -> tuple[str, str]:
    pid = f"c{conn}" if epoch == 0 else f"c{conn}r{epoch}"
    label = f"Client c{conn}" if epoch == 0 else f"Client c{conn} (after restart {epoch})"
    return pid, label


def _advertised(profile: Caps, wire: str) -> str:
    """What an agent with ``profile`` advertises: on the string wire, no systemPrompt at all."""
    if wire == "string":
        profile = replace(profile, system_prompt=PromptCap.NONE)
    if wire == V2_WIRE:  # no loadSession in v2; resume, close and list are the baseline
        profile = replace(profile, load_session=False, resume=True, close=True, list=True)
    return _mm(profile.label())


def mermaid(
    trace: Trace,
    tables: Tables,
    rid: str,
    *,
    wire: str = "blocks",
    keep: Callable[[str], bool] | None = None,
    counterexample: int | None = None,
    meta: Collection[str] = (),
) -> str:
    """A Mermaid ``sequenceDiagram``: one arrow per sent request and one per reply (with
    ``counterexample``, a note where the counterexample ends and its epilogue begins). A
    request's connection is its participant (``c0``), so its label leaves ``conn=`` out."""
    steps = replay(trace, tables, keep)
    first = first_violation(steps, rid)
    participants: dict[str, str] = {}
    body: list[str] = [f"Note over A: starts advertising {_advertised(trace.profile, wire)}"]
    for i, r in enumerate(steps, 1):
        if i - 1 == counterexample:
            body.append(
                f"Note over A: the counterexample ends at step {counterexample}; "
                "what follows only shows it on the wire"
            )
        step, req = r.step, r.step.request
        epoch = step.before.restarts
        if req.method == "connect":
            conn = len(step.before.connections)
            pid, label = _participant(epoch, conn)
            participants.setdefault(pid, label)
            again = " again" if epoch else ""  # its participant says after which restart
            kind = "" if req.client is ClientKind.CONFORMING else f" ({req.client.value} client)"
            body.append(f"Note over A: {i}. c{conn} connects{again}{kind}")
            where = f"{pid},A"
        elif req.method == "restart":
            after = f" advertising {_advertised(req.profile, wire)}" if req.profile else ""
            body.append(f"Note over A: {i}. restarts{after}")  # its clients connect again
            where = "A"
        else:
            pid, label = _participant(epoch, req.conn)
            participants.setdefault(pid, label)
            where = f"{pid},A"
            label = _CONN.sub("(", request_label(req, wire, meta))  # the arrow's client says it
            if not step.sent:
                body.append(f"Note over {pid}: {i}. declines to send {_mm(label)}")
            else:
                body.append(f"{pid}->>A: {i}. {_mm(label)}")
                arrow = "--x" if step.reply.error else "-->>"
                body.append(f"A{arrow}{pid}: {_mm(reply_text(step.reply))}")
        if i == first:
            others = [v for v in r.violated if v != rid]
            also = f" (also {', '.join(others)})" if others else ""
            body.append(f"Note over {where}: ✗ {rid} first violated here{also}")
    head = ["sequenceDiagram"]
    head += [f"participant {pid} as {label}" for pid, label in participants.items()]
    head.append("participant A as Agent")
    return "\n".join(head + body) + "\n"
