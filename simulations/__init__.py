"""Everything that runs the model: the engines that search its tables (``engines``), the ACP wire
and its vendored schemas (``wire``), the live side — the reference agent, ``conform``,
``conform-client`` and ``validate`` (``live``) —, the outputs (``outputs``), the library API
(``api``), the command line (``cli``, the dispatch, over ``commands``, one module per
command) and the notebook helpers (``notebook``)."""
