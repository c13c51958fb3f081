"""Write the shortest counterexample of every mutant (ITF trace and the other four forms).

Run: .venv/bin/python tools/write_itf_traces.py OUT_DIR

For each mutant of ``model.mutants``: explore the smallest bound that shows the id it declares
(``simulations.engines.explore.smallest_bound_showing``, as the report's kill matrix does)
and write into ``OUT_DIR/<mutant>/`` what
``acp-sysprompt counterexample --mutant <mutant> --id <id>`` writes
(``simulations.outputs.forms.write_counterexample``), ``trace.itf.json`` among it.
``make itf-check`` hands these (and the report's traces, if ``make demo`` wrote them) to
Quint's own ITF reader, ``tools/quint/check_itf.cjs``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model.mutants import MUTANTS
from simulations.engines.explore import smallest_bound_showing
from simulations.outputs.forms import write_counterexample


def write_all(out: Path, names: list[str] | None = None) -> list[Path]:
    written = []
    for name in names or list(MUTANTS):
        m = MUTANTS[name]
        ex = smallest_bound_showing(
            m.tables, m.violates, None if m.revision == "rfd-final" else m.admits
        )
        if m.violates not in ex.first:
            raise SystemExit(f"write_itf_traces: mutant {name} shows no {m.violates} up to default")
        paths = write_counterexample(
            out / name, ex.trace(m.violates), m.tables, m.violates, m.revision, name, bound=ex.bound
        )
        written.append(paths["trace.itf.json"])
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("out", type=Path, help="directory to write <mutant>/trace.itf.json into")
    ap.add_argument("--mutant", action="append", choices=sorted(MUTANTS), help="only these")
    args = ap.parse_args()
    paths = write_all(args.out, args.mutant)
    print(f"wrote {len(paths)} ITF traces under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
