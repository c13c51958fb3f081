"""The model as judge, shared by every live tool: the statuses, tiers, pseudo-ids, findings,
tests and runs a live run is made of (``results``), the one tier table of every judge
(``tiers``), and the model's checks redone on a step as an agent showed it (``judge``).

It imports no tool wing (``conform``, ``conform_client``, ``validate``, ``world``,
``reference``): the tools ask it.
"""

# the modules other wings, the command line and the tools use
__all__ = ["judge", "results", "tiers"]
