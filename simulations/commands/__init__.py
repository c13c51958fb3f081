"""The commands of ``acp-sysprompt``, one module each: its options (``add_parser``) and its run.

``simulations.cli`` assembles the parser from them and dispatches; these modules import
neither it nor one another's runs, but for ``check``, whose population run and ``--out``
writing are modules of their own (``population``, ``check_out``). What several commands share
is in ``common`` (exit codes, the parser class, argument types, the stderr lines before a run,
the cache and cluster of the running command) and ``progress`` (the progress lines);
``subjects`` reads the build a model command is given. ``conform`` holds the live agent's
command and ``replay TRACE -- AGENT_CMD``. ``validate`` and ``conform-client`` keep their
parsers in ``simulations.live``.
"""
