"""The commands of ``acp-sysprompt``, one module each: its options (``add_parser``) and its run.

``simulations.cli`` assembles the parser from them and dispatches; no command imports it
(``tests/test_layout.py``), and none imports another but ``check``, whose population run and
``--out`` writing are modules of their own (``population``, ``check_out``). What several
commands share is in ``common`` (exit codes, the parser class, argument types, the stderr
lines before a run, the cache and cluster of the running command), ``progress`` (the progress
lines) and ``subjects`` (the build a model command is given, and how its outputs name it).
``conform`` holds the live agent's command and ``replay TRACE -- AGENT_CMD``. ``validate`` and
``conform-client`` keep their parsers in ``simulations.live``.
"""
