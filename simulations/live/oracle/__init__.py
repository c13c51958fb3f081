"""The model as judge, shared by every live tool: the model one run asks what may happen next
and what it says of a step (``oracle``: the one place a live tool's engines are built), the
statuses, tiers, pseudo-ids, findings, tests and runs a live run is made of (``results``), the
one tier table of every judge (``tiers``), and the judging of a step as an agent showed it
(``judge``: choices, options, the ids a run judges and cites).

It imports no tool wing (``conform``, ``conform_client``, ``validate``, ``world``,
``reference``): the tools ask it.
"""

# the modules other wings, the command line and the tools use
__all__ = ["judge", "oracle", "results", "tiers"]
