"""A folder given to ``validate``: which of the tool's folders it is, and what in it is read.

Scope
    ``what_folder`` tells the folders the tool writes apart by what they hold, in this order,
    and says in one line what it found (the folder, what kind it is, and its verdict where it
    states one):

    - the tee's records (``python -m simulations.live.process.tee --log DIR``): its
      ``process-<n>.ndjson`` files, read as one recording by ``simulations.live.validate.validate``;
    - the folder of ``conform --out DIR`` (or any folder holding a ``report.json``: a
      conform-client or test kit report saved there): its ``report.json`` is judged, each
      failing test by its transcript and the others by the wire files it names in ``wire/``;
      the report's own verdict is quoted in the line;
    - a failure's folder inside it (``DIR/<id>/``): its ``live.ndjson``, the agent's wire;
    - ``conform --out``'s ``wire/``, or any folder of logs: each ``*.ndjson`` file judged on
      its own.

    A folder with none of these is a UsageError naming what was looked for (exit 2): nothing
    was judged, so it is never "clean".

Abstractions
    ``Found``: the files read in the folder's place (none for the tee's records, whose folder
    ``validate`` reads itself) and the line that says what the folder is. A report is read at
    most ``REPORT_LIMIT`` bytes to quote its verdict; one that cannot be read is said so and
    left to the reader of reports, which refuses it in its own line. Names are shown escaped
    (``model.files.printable``): a folder's name may carry what a terminal acts on.

Source
    What the tool writes: ``simulations.live.conform.report.write_out`` (``--out DIR``),
    ``simulations.live.process.tee`` (the tee's folder); docs/validate.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from model.files import printable
from simulations.live.validate.read import REPORT_LIMIT
from simulations.usage import UsageError

TEE = "tee"
REPORT = "report"
FAILURE = "failure"
LOGS = "logs"

_TEE_FILE = re.compile(r"process-\d+\.ndjson")
REPORT_NAME = "report.json"  # conform --out DIR's JSON report
LIVE_NAME = "live.ndjson"  # a failure folder's wire (conform --out DIR/<id>/)
LOOKED_FOR = (
    "process-<n>.ndjson (the tee's records), report.json (conform --out DIR), "
    "live.ndjson (a failure's folder of it) or *.ndjson logs (its wire/)"
)


@dataclass(frozen=True)
class Found:
    """What a folder is (``kind``), the files read in its place, and the line saying so."""

    kind: str
    line: str
    files: list[Path] = field(default_factory=list)


def what_folder(folder: Path) -> Found:
    """``folder`` told apart by what it holds (see the module's docstring); a UsageError,
    one line naming what was looked for, when it holds nothing ``validate`` reads."""
    try:
        entries = sorted(
            (e.name, e.is_file()) for e in os.scandir(folder) if not e.name.startswith(".")
        )
    except OSError as e:
        raise UsageError(f"argument LOG: cannot read {folder}: {e.strerror or e}") from None
    files = [name for name, is_file in entries if is_file]
    name = printable(folder, 200)
    tee = [f for f in files if _TEE_FILE.fullmatch(f)]
    if tee:
        return Found(TEE, f"{name}: the tee's records, {len(tee):,} process file(s)")
    if REPORT_NAME in files:
        report = folder / REPORT_NAME
        return Found(REPORT, f"{name}: {_report_line(report)}", [report])
    if LIVE_NAME in files:
        return Found(
            FAILURE,
            f"{name}: a failure's folder of conform --out ({LIVE_NAME}, the agent's wire)",
            [folder / LIVE_NAME],
        )
    logs = [f for f in files if f.endswith(".ndjson")]
    if logs:
        return Found(
            LOGS,
            f"{name}: {len(logs):,} log(s) (*.ndjson, as conform --out's wire/), each on its own",
            [folder / f for f in logs],
        )
    raise UsageError(
        f"argument LOG: {name}: is a directory with nothing validate reads (looked for "
        f"{LOOKED_FOR}; found {_listing(entries)})"
    )


def _listing(entries: list[tuple[str, bool]]) -> str:
    if not entries:
        return "nothing"
    names = [printable(n, 60) + ("" if f else "/") for n, f in entries[:5]]
    more = f" and {len(entries) - 5:,} more" if len(entries) > 5 else ""
    return ", ".join(names) + more


def _report_line(path: Path) -> str:
    """What the report at ``path`` is and its verdict, in a few words."""
    try:
        with path.open("rb") as f:
            raw = f.read(REPORT_LIMIT + 1)
    except OSError as e:
        return f"{REPORT_NAME} (cannot be read: {e.strerror or e})"
    if len(raw) > REPORT_LIMIT:
        return f"{REPORT_NAME} (over {REPORT_LIMIT >> 20} MiB: its verdict not read)"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return f"{REPORT_NAME} (not JSON)"
    if not isinstance(data, Mapping):
        return f"{REPORT_NAME} (not a report)"
    if "client" in data:
        what = "conform-client's report"
    elif "agent_command" in data and ("wire" in data or "walks" in data):
        what = "conform's report (conform --out DIR)"
    else:
        what = "a report"
    wire = data.get("wire")
    files = wire.get("files") if isinstance(wire, Mapping) else None
    extra = f", {len(files):,} test wire file(s) in wire/" if isinstance(files, Mapping) else ""
    return f"{what}, verdict {_verdict(data)}{extra}"


def _verdict(data: Mapping[str, object]) -> str:
    """The verdict a report states: an interruption or an internal error first, then its
    ``verdict`` (conform-client's text; conform's and the kit's ``conformant`` and the ids
    failing)."""
    if data.get("internal_error"):
        return "none (the run ended on an internal error)"
    if data.get("interrupted"):
        return "none (the run was interrupted)"
    v = data.get("verdict")
    if isinstance(v, str):
        return printable(v, 200)
    if isinstance(v, Mapping) and isinstance(v.get("conformant"), bool):
        if v["conformant"]:
            return "CONFORMANT"
        failing = v.get("failing")
        ids = [str(x) for x in failing] if isinstance(failing, list) else []
        return "NOT CONFORMANT" + (f" ({printable(', '.join(ids), 200)})" if ids else "")
    return "not stated"
