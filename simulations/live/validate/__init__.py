"""``validate``: judge a recorded ACP session by the model. The entry and its report
(``validate``), the reader of the inputs (``read``), one pass over one agent process's entries
(``stream``), the following of a log where it departs from the model (``follow``), and what the
stream judges with (``model``).

It does not import ``conform``.
"""

# the modules other wings, the command line and the tools use
__all__ = ["model", "read", "stream", "validate"]
