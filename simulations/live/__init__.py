"""The live side: real processes judged by the model, in wings by job.

``process`` runs a program under test (model-blind); ``endpoint`` is the recording model API;
``recipes`` holds real agents as data; ``oracle`` is the model as judge for every tool. The
tools: ``reference`` (the reference agent), ``conform`` (the model's tests against an agent on
stdio), ``conform_client`` (the tool plays the agent toward a real client), ``validate`` (a
recorded log judged) and ``world`` (a real client driving a real agent). Each wing's
``__init__`` says what it does and lists, in ``__all__``, the modules the others may use.
"""
