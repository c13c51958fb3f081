"""``python -m simulations.agent``: the reference agent's process, under the name it has always had.

Scope
    The reference agent is on the live side: ``simulations.live.reference.agent`` (the state
    machine, its builds and its store) and ``simulations.live.reference.stdio`` (the process on
    stdio, its command line). This module only runs that process, so every command that names it —
    the recipes, conform's and conform-client's agent commands, the tests, the README — keeps
    working with the same arguments, exit codes and stdio handling. Code imports the live
    modules; this one holds nothing of its own.

Source
    The project's own command line (docs/reference-agent.md, "A live agent: the reference
    agent and the introspection extension").
"""

from __future__ import annotations

from simulations.live.reference.stdio import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    run()
