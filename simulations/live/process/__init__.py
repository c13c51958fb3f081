"""Running a program under test, blind to the model: one agent on stdio through the SDK
(``transport``, under the ``supervise`` script), the sandbox that contains a step (``sandbox``),
the reaper that stops every process a test started (``reaper``), and the recording pipes between
a client and its agent (``tee`` for recording by hand; ``recorder`` and its ``connect`` script for
``conform-client`` and ``world``).

It reads no requirement and judges nothing: this wing imports no other wing of
``simulations.live``. ``supervise`` and ``connect`` run as files, not as modules of the
package.
"""

# the modules other wings, the command line and the tools use
__all__ = ["reaper", "recorder", "sandbox", "tee", "transport"]
