"""Real agents as data: an agent recipe (TOML) says how to install and run an agent against the
recording model endpoint (``recipes``; the shipped recipes are the ``*.toml`` files of this
folder), and the runtime a recipe's agent needs besides Node (``runtimes``).
"""

# the modules other wings, the command line and the tools use
__all__ = ["recipes", "runtimes"]
