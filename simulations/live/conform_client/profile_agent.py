"""The reference agent under the profile a file names: the agent ``conform-client`` hands a client.

Scope
    ``python -m simulations.live.conform_client.profile_agent CAPS_FILE STORE`` runs the
    reference agent of v1-stable (``simulations.live.reference.stdio``) in this process with
    ``--caps`` read from ``CAPS_FILE`` at its start and ``--store STORE``. The client's agent
    command stays the same for a whole test; between two steps the tool rewrites the file, so
    the next agent process the client starts is a restart of the same agent (its store kept)
    under another profile: an upgrade or a downgrade (``simulations.live.conform_client.run``).

Source
    The reference agent's command line (docs/reference-agent.md); a restart keeps the store
    (``simulations.live.reference.agent``, ``--store``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from simulations.live.reference.stdio import run

REVISION = "v1-stable"


def main() -> None:
    caps_file, store = sys.argv[1:3]
    caps = Path(caps_file).read_text(encoding="utf-8").strip()
    prog = "python -m simulations.agent"
    sys.argv = [prog, "--revision", REVISION, "--caps", caps, "--store", store]
    run()


if __name__ == "__main__":
    main()
