"""The live side: real processes judged by the model. The reference agent (``agent``,
``agent_stdio``); ``conform``, which runs the model's tests against an agent on stdio through the
official SDK, optionally through a recording model endpoint and a sandbox; ``conform-client``,
which plays the agent towards a real client; ``validate``, which judges a recorded log; and
``world``, a real client driving a real agent (``make real-world``)."""
