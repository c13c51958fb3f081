"""Worker processes of a local cluster leave Ctrl-C to the command (``check --cluster local:N``).

Scope
    A Ctrl-C on a terminal reaches every process of the foreground group, the local cluster's
    workers included: a worker that died of it would take the levels it holds with it, just
    when the command wants them to finish the partial answer. ``QuietWorker`` (registered by
    ``simulations.engines.cluster.attached`` on the clusters it starts) makes each worker
    ignore SIGINT, as the local fan-out's workers do; the command stops them when it ends.

Abstractions
    Imported only where Dask is installed: on the workers, and by ``attached``.

Source
    Dask ``distributed``'s worker plugins (``WorkerPlugin.setup`` runs in each worker, a
    restarted one included).
"""

from __future__ import annotations

import contextlib
import signal
from typing import Any

from distributed import WorkerPlugin  # an Any where the extra is absent (mypy)


class QuietWorker(WorkerPlugin):  # type: ignore[misc,unused-ignore]
    name = "acp-sysprompt-quiet-worker"

    def setup(self, worker: Any) -> None:
        with contextlib.suppress(ValueError):  # not the process's main thread: nothing to do
            signal.signal(signal.SIGINT, signal.SIG_IGN)
