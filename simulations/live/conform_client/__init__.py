"""``conform-client``: the tool plays the agent toward a real client and judges the client.
The run and its report (``conform``), the plan derived from the model's client rules
(``plan``; its criterion and the greedy cover of it, ``cover``), client recipes (``recipe``;
the shipped ones are in ``recipes/``), one test's processes and records (``run``; the agent
it starts, under the profile a file names so that a restart can change it,
``profile_agent``), and the repository's own scripted client (``scripted_client``, started
as ``python -m simulations.live.conform_client.scripted_client``); the report as
``--junit``'s cases (``junit_cases``).

It judges the records with ``validate``'s stream.
"""

# the modules other wings, the command line and the tools use
__all__ = ["conform", "recipe", "run"]
