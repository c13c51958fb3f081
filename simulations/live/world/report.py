"""What ``world`` found, as a page and one picture: ``docs/real-world.md`` and its PNG.

Scope
    ``render_page`` writes the matrix (client × agent × way, a column per step), the
    findings (one paragraph per client × agent pair whose prompt did not reach the model's
    system slot in the mode asked, with the versions, the steps, the rule responsible and the
    command that shows it) and the details (what the client sent at each step).
    ``draw_picture`` draws the same matrix as one PNG (matplotlib, Agg): a row per client ×
    agent × way, a column per step, each cell coloured by its status.

Source
    ``simulations.live.world.world`` (the cells); issue 43, item 5 (one picture at the top).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from simulations.live.world.world import (
    LOST,
    NOT_OFFERED,
    NOT_RUN,
    NOT_SENT,
    OTHERWISE,
    REACHED,
    SENT,
    STEPS,
    UNSEEN,
    Cell,
)

# a step's status as a cell of the matrix: (mark, colour)
SHOWN = {
    REACHED: ("✓ reached", "#5cb85c"),
    OTHERWISE: ("≈ otherwise", "#f0ad4e"),
    LOST: ("✗ lost", "#d9534f"),
    UNSEEN: ("? not seen", "#bbbbbb"),
    NOT_OFFERED: ("— not offered", "#e8e8e8"),
    NOT_RUN: ("· not run", "#ffffff"),
    SENT: ("→ sent", "#d9edf7"),
    NOT_SENT: ("∅ not sent", "#f2dede"),
}
TOOL = "python tools/real_world.py"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def asked(cells: Sequence[Cell]) -> list[Cell]:
    """The cells of a way the user asked for (the baseline with no prompt left out)."""
    return [c for c in cells if c.way != "none"]


def _step(cell: Cell, name: str) -> str:
    s = next(x for x in cell.steps if x.name == name)
    mark = SHOWN.get(s.status, (s.status, ""))[0]
    return f"{mark}: {_md(s.where)}" if s.where else mark


def finding(pair: Sequence[Cell]) -> str | None:
    """One paragraph on a client × agent pair whose prompt did not reach the slot in the
    mode asked in some way (None: it did in every way, or nothing was seen)."""
    bad = [c for c in asked(pair) if c.outcome.status in (LOST, OTHERWISE)]
    if not bad:
        return None
    c0 = bad[0]
    ways = []
    for c in bad:
        o = c.outcome
        new = next(s for s in c.steps if s.name == "new")
        ways.append(
            f"asked for **{c.way}** (the client sent {new.where or 'nothing'}), the prompt was "
            f"**{o.status}** at the {o.name} step — {o.where}; responsible: {o.rule}"
        )
    names = " ".join(sorted({c.way for c in bad}))
    return (
        f"**{c0.client} {c0.client_version} × {c0.agent} {c0.agent_version}** (the agent "
        f"advertises `{c0.advertised}`): " + "; ".join(ways) + ". Shown by "
        f"`{TOOL} --clients {c0.client} --agents {c0.agent} --ways {names}` "
        "(the client drives the agent offline against a recording model endpoint)."
    )


def second_sessions(pairs: Sequence[Sequence[Cell]]) -> list[str]:
    """One paragraph per client whose first turn ran on a session other than the one its new
    step made (the reopen refused, a new session opened), naming the agents."""
    by: dict[str, dict[str, str]] = {}  # client → agent → how its reopen was refused
    for pair in pairs:
        for c in pair:
            turn = next(s for s in c.steps if s.name == "turn")
            if "on a second session" not in turn.where:
                continue
            how = turn.where.split("on a second session: ", 1)[1].rstrip(")")
            agents = by.setdefault(f"{c.client} {c.client_version}", {})
            agents.setdefault(f"{c.agent} {c.agent_version}", how)
    return [
        f"**{client}: the session its `new` step creates is not the one the first turn runs "
        f"on.** With {len(agents)} agent(s) — "
        + "; ".join(f"{agent} ({how})" for agent, how in agents.items())
        + " — the turn's client process "
        "re-opened the session, the agent refused, and the client opened a new session for "
        "the turn (re-sending what it sent at creation). A user who reads the session's id "
        "from the new step is then talking to another session. Shown by "
        f"`{TOOL} --clients {client.split()[0]}` (the 'What each step sent' table below)."
        for client, agents in by.items()
    ]


def render_page(
    pairs: Sequence[Sequence[Cell]],
    seconds: float,
    isolation: str,
    skipped: Sequence[str] = (),
    picture: str = "real-world.png",
) -> str:
    """The page: the picture, the matrix, the findings, the details."""
    lines = [
        "# Real client × real agent: does the user's prompt reach the model?",
        "",
        f"![client × agent × way × step]({picture})",
        "",
        "Written by `make real-world` (`tools/real_world.py`, `simulations/live/world/world.py`): "
        "for each shipped client recipe and each agent recipe, the client drives the agent with "
        "the user's prompt given in each way the client offers, through a new session (`new`), a "
        "turn (`turn`), a later prompt in a new client process once every agent process has "
        "ended (`reopen`: the client loads, resumes or opens a new session, as it does) and a "
        "fork where both have one (`fork`). The agent runs offline in the sandbox "
        "([sandbox.md](sandbox.md)), its model calls go to the recording endpoint "
        "([recipes.md](recipes.md#the-endpoint)); every line between client and agent is "
        "recorded by the tool. Each turn is judged by the system slot of its own model call: "
        "the prompt **reached** it in the mode asked (append: beside the agent's own text; "
        "override: in place of the agent's instructions, its context allowed, as T13 is "
        "judged), reached it **otherwise** (in a user message, appended where override was "
        "asked, the agent's text replaced where append was), or was **lost**; a loss or a "
        "departure is traced to the request the session ran under and what the agent "
        "advertised (ids: [REQUIREMENTS.md](REQUIREMENTS.md)). The agent's own text is learnt "
        "first from two ways with no prompt, in two working directories.",
        "",
        f"The whole matrix took {seconds:.0f} s here (2 cores, one step at a time); offline: "
        f"{isolation}.",
    ]
    if skipped:
        lines += ["", "Not run: " + "; ".join(skipped) + "."]
    lines += [
        "",
        "## The matrix",
        "",
        "| client | agent | advertises | way | " + " | ".join(STEPS) + " | outcome |",
        "|---|---|---|---|" + "---|" * len(STEPS) + "---|",
    ]
    for pair in pairs:
        for c in asked(pair):
            o = c.outcome
            outcome = f"**{o.status}**" + (f" at {o.name}" if o.status != REACHED else "")
            if o.rule:
                outcome += f" — {_md(o.rule)}"
            lines.append(
                f"| {c.client} {c.client_version} | {c.agent} {c.agent_version} | "
                f"`{c.advertised}` | {c.way} | "
                + " | ".join(_step(c, s) for s in STEPS)
                + f" | {outcome} |"
            )
    found = [f for f in (finding(p) for p in pairs) if f] + second_sessions(pairs)
    lines += ["", "## Findings", ""]
    lines += [f"- {f}" for f in found] or ["None: every prompt reached the slot in its mode."]
    lines += [
        "",
        "## What each step sent",
        "",
        "Each request the client sent that opens a session, with where it put the prompt and "
        "the agent's answer; the baseline is the way with no prompt.",
        "",
        "| client | agent | way | step | ran | requests |",
        "|---|---|---|---|---|---|",
    ]
    for pair in pairs:
        for c in pair:
            for s in c.steps:
                if s.status in (NOT_OFFERED, NOT_RUN) and not s.opens:
                    continue
                way = "none (baseline)" if c.way == "none" else c.way
                lines.append(
                    f"| {c.client} | {c.agent} | {way} | {s.name} | {_md(s.ran) or '—'} | "
                    f"{_md(' → '.join(s.opens)) or '—'} |"
                )
    return "\n".join(lines) + "\n"


def draw_picture(pairs: Sequence[Sequence[Cell]], path: Path) -> None:
    """The matrix as one PNG: a row per client × agent × way, a column per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    rows = [c for pair in pairs for c in asked(pair)]
    width, height = 2.3 + 1.55 * len(STEPS), 1.4 + 0.42 * max(1, len(rows))
    fig, ax = plt.subplots(figsize=(width + 2.6, height))
    for i, c in enumerate(rows):
        y = len(rows) - 1 - i
        for j, name in enumerate(STEPS):
            s = next(x for x in c.steps if x.name == name)
            mark, colour = SHOWN.get(s.status, (s.status, "#ffffff"))
            if s.status == SENT:  # where it went: the standard field, or elsewhere
                mark = "→ in the field" if s.where.startswith("systemPrompt") else "→ in _meta"
            ax.add_patch(Rectangle((j, y), 1, 1, facecolor=colour, edgecolor="white", lw=2))
            ax.text(j + 0.5, y + 0.5, mark, ha="center", va="center", fontsize=8)
    ax.set_xlim(0, len(STEPS))
    ax.set_ylim(0, max(1, len(rows)))
    ax.set_xticks([j + 0.5 for j in range(len(STEPS))], list(STEPS))
    ax.xaxis.tick_top()
    ax.set_yticks(
        [len(rows) - 1 - i + 0.5 for i in range(len(rows))],
        [f"{c.client} × {c.agent} {c.agent_version} · {c.way}" for c in rows],
        fontsize=8,
    )
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    clients = ", ".join(sorted({f"{c.client} {c.client_version}" for c in rows}))
    ax.set_title(
        f"Does the system prompt given to {clients or 'the client'} reach the agent's model?",
        fontsize=10,
        pad=24,
    )
    legend = [Patch(facecolor=SHOWN[k][1], label=SHOWN[k][0]) for k in SHOWN]
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
