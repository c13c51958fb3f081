"""The reference agent: an ACP agent whose every answer is the model's (``agent``), and the
same agent as a process on stdio (``stdio``; started as ``python -m simulations.agent``).
"""

# the modules other wings, the command line and the tools use
__all__ = ["agent", "stdio"]
