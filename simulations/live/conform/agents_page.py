"""The opening of ``docs/real-agents.md``: one picture of every agent judged (agents × ids) and
the findings an upstream issue can take as they are, both from a small summary per agent.

Scope
    ``tools/real_agents.py`` (``make real-agents``) keeps, beside the page, a JSON summary per
    recipe (``summary``: its package and version, verdict, how long it took, each id's status
    and, for each FAIL, the evidence of the first failing test, with the question it raises
    for the text where the slot kept a provider-mandated line). A run of some recipes updates
    their entries and leaves the others' as they were, as the page keeps their sections; the
    picture (``draw``) and the findings (``findings``) are drawn from the whole summary, so
    they always show every agent the page shows.

Source
    Ours; the statuses and tiers are ``simulations.live.oracle.results``'.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simulations.live.oracle.results import (
    FAIL,
    NOT_TESTED,
    PASS,
    SKIPPED,
    TIERS,
    id_key,
)

UNSTABLE = "UNSTABLE"  # an id that failed in some runs of a repeated plan and not in others
SHOWN = {  # status → (legend, colour)
    PASS: ("PASS", "#a6d96a"),
    FAIL: ("FAIL", "#d7191c"),
    UNSTABLE: ("FAIL in some runs", "#fdae61"),
    SKIPPED: ("SKIPPED (nothing reaches it)", "#e0e0e0"),
    NOT_TESTED: ("NOT TESTED", "#ffffff"),
}
EVIDENCE = 600  # characters of a finding's evidence kept


def summary(
    report: Mapping[str, Any], package: str, version: str | None, seconds: float, tests: int
) -> dict[str, Any]:
    """What the page's opening needs of one agent's run, from its JSON report (``to_json``:
    so a report written earlier summarises as well as one just made)."""
    reqs = report["requirements"]
    unstable = report.get("unstable") or {}
    statuses: dict[str, str] = {}
    evidence: dict[str, str] = {}
    for rid, r in reqs.items():
        if rid.startswith("ROW-"):
            continue
        status = r["status"]
        statuses[rid] = UNSTABLE if rid in unstable else status
        if status == FAIL:
            outcomes = [o for o in r["outcomes"] if o["status"] == FAIL]
            failed = [o["message"] for o in outcomes]
            runs = unstable.get(rid)
            note = f"FAIL in {runs['failed']} of {runs['runs']} runs; " if runs else ""
            note += f"{len(failed)} of the {len(r['outcomes'])} tests that judged it failed it"
            evidence[rid] = f"{note}: {(failed or [''])[0][:EVIDENCE]}"
            question = (outcomes[0].get("properties") or {}).get("question") if outcomes else None
            if isinstance(question, str):  # a provider-mandated line: what it asks of the text
                evidence[rid] += f". The question for the text: {question[:EVIDENCE]}"
    verdict = report["verdict"]
    return {
        "package": package,
        "version": version,
        "conformant": bool(verdict["conformant"]),
        "failing": list(verdict["failing"]),
        "seconds": round(seconds),
        "tests": tests,
        "repeat": report.get("repeat", 1),
        "tiers": {rid: reqs[rid]["tier"] for rid in statuses},
        "statuses": statuses,
        "evidence": evidence,
    }


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The summaries kept beside the page (none yet, or unreadable: empty)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(path: Path, summaries: Mapping[str, Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dict(sorted(summaries.items())), indent=1, sort_keys=True)
    path.write_text(text + "\n", encoding="utf-8")


def columns(summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The ids some agent's run judged (not SKIPPED everywhere), by tier, then registry order."""
    ids = {
        rid
        for s in summaries.values()
        for rid, status in s["statuses"].items()
        if status != SKIPPED
    }
    tier_of = {rid: t for s in summaries.values() for rid, t in s["tiers"].items()}
    return sorted(ids, key=lambda r: (TIERS.index(tier_of[r]), id_key(r)))


def findings(summaries: Mapping[str, Mapping[str, Any]], revision: str) -> list[str]:
    """One paragraph per agent and id it fails (FAIL in every run, or in some: said so), with
    the versions and the command that shows it."""
    out = []
    for name, s in sorted(summaries.items()):
        for rid, status in s["statuses"].items():
            if status not in (FAIL, UNSTABLE):
                continue
            how = "fails" if status == FAIL else "fails in some runs only:"
            said = s["evidence"].get(rid, "").strip().rstrip(".")
            said += "" if said.endswith("?") else "."
            out.append(
                f"- **{s['package']} {s['version']} {how} {rid}** ({s['tiers'][rid]}, revision "
                f"{revision}): {said} Shown by: "
                "`make real-agents "
                f"AGENTS={name}`, or `acp-sysprompt conform --recipe {name} --prefix real-agents "
                f"--only {rid}` once it is installed."
            )
    return out or ["- none: every agent judged kept every id it was tested on"]


def draw(summaries: Mapping[str, Mapping[str, Any]], path: Path) -> None:
    """Agents × ids as one PNG (matplotlib, Agg), a cell per id an agent's run judged."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    names = sorted(summaries)
    ids = columns(summaries)
    fig, ax = plt.subplots(figsize=(3.4 + 0.42 * max(1, len(ids)), 1.6 + 0.4 * max(1, len(names))))
    for i, name in enumerate(names):
        y = len(names) - 1 - i
        for j, rid in enumerate(ids):
            status = summaries[name]["statuses"].get(rid, SKIPPED)
            colour = SHOWN.get(status, (status, "#ffffff"))[1]
            ax.add_patch(Rectangle((j, y), 1, 1, facecolor=colour, edgecolor="white", lw=1.5))
            if status in (FAIL, UNSTABLE):
                ax.text(j + 0.5, y + 0.5, "✗", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, max(1, len(ids)))
    ax.set_ylim(0, max(1, len(names)))
    ax.set_xticks([j + 0.5 for j in range(len(ids))], ids, rotation=90, fontsize=8)
    ax.xaxis.tick_top()
    labels = [f"{summaries[n]['package']} {summaries[n]['version']}" for n in names]
    ax.set_yticks([len(names) - 1 - i + 0.5 for i in range(len(names))], labels, fontsize=8)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    legend = [Patch(facecolor=c, edgecolor="#999999", label=label) for label, c in SHOWN.values()]
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
