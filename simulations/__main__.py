"""``python -m simulations`` is the ``acp-sysprompt`` command."""

import sys

from simulations.cli import main

if __name__ == "__main__":  # a cluster's spawned workers import this module again: no run there
    sys.exit(main())
