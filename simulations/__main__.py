"""``python -m simulations`` is the ``acp-sysprompt`` command."""

import sys

from simulations.cli import main

sys.exit(main())
