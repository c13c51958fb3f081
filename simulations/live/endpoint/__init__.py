"""The recording model endpoint: a fake model API an agent is pointed at, which records what
the agent puts in its model's system slot (``endpoint``, the server; ``model_calls``, what
each call carries, per API), answers every call in the shape of its API (``model_answers``),
and reads the slot's parts (``slot_reading``; the lines a model provider requires in a slot:
``provider_lines``); ``model_client`` is the calling side, what the reference agent sends to
a model API of each kind.

It imports no other wing of ``simulations.live``: the tools that judge what it recorded read it.
"""

# the modules other wings, the command line and the tools use
__all__ = ["endpoint", "model_calls", "model_client", "provider_lines", "slot_reading"]
