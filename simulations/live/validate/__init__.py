"""``validate``: judge a recorded ACP session by the model. The entry and its report
(``validate``), the reader of the inputs (``read``), one pass over one agent process's entries
(``stream``: a reader of the messages, wired to a follower and a judge), the model kept in step
with the log and followed where the log departs (``follow``), and the judge of the findings with
what the stream judges with (``model``); the findings as ``--junit``'s cases (``junit_cases``).

It does not import ``conform``.
"""

# the modules other wings, the command line and the tools use
__all__ = ["model", "read", "stream", "validate"]
