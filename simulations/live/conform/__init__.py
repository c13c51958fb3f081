"""``conform``: model-based conformance of a running ACP agent. The run (``conform``) with its
options and interrupt (``options``), its plan and coverage criterion (``plan``, ``coverage``),
one test and its state (``execute``, ``run_state``, ``slot_checks``), the tests outside the
plan (``probes``) and the random walks (``walks``), and its report (``report``) with its
verdict (``verdict``: CONFORMANT, NOT CONFORMANT or INCOMPLETE, which ``conform_client`` says
too); the pinned expectations of real agents (``expectations``) and the opening of
``docs/real-agents.md`` (``agents_page``); the ``conform`` command of ``acp-sysprompt`` and
``replay -- AGENT_CMD``, options and run (``command``), and the report as ``--junit``'s cases
(``junit_cases``).

It imports neither ``validate`` nor ``conform_client``: its judge is the oracle wing.
"""

# the modules other wings, the command line and the tools use
__all__ = [
    "agents_page",
    "command",
    "conform",
    "expectations",
    "options",
    "plan",
    "report",
    "verdict",
]
