"""``world``: a real client drives a real agent; does the user's prompt reach the model? The
run (``world``) and its page and picture (``report``).
"""

# the modules other wings, the command line and the tools use
__all__ = ["report", "world"]
