"""Benchmark: Ray against Dask (`distributed`) for what the cluster engine needs (issue 42).

Run: PYTHONPATH=. python bench/cluster_bench.py [--engines dask,ray] [--workers 2]
     (with both engines installed: this is how the engine was chosen; the project's
     ``cluster`` extra then installs only the one chosen)

What is measured, on a local cluster of ``--workers`` single-threaded worker processes:

* start-up: from nothing to the first trivial task's result (and the shutdown after);
* per-task overhead: 2,000 no-op tasks submitted at once, per task;
* a frontier batch: 1,000 and 10,000 worlds of the ``large`` scope (its first BFS levels),
  packed as the distributed search packs them (``simulations.engines.cluster.pack``), the
  bytes and the pack/unpack seconds, then a round trip through the engine (put on a worker,
  a task that unpacks it and returns its length: the round trip less the unpacking);
* memory: the resident memory of every process the engine started (workers, scheduler,
  nanny, raylet, …) once idle, and per worker after it imported the model.

Prints a Markdown table (one row per engine) for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

NOOPS = 2000


def _noop(x: int) -> int:
    return x


def _imports_model() -> int:
    import simulations.engines.explore  # noqa: F401  (what a search task imports)

    return os.getpid()


def _unpacked(blob: bytes) -> tuple[int, float]:
    """A task: the batch unpacked where it arrived; its length and the seconds unpacking took."""
    from simulations.engines.cluster import Interner, unpack

    t0 = time.perf_counter()
    n = len(unpack(blob, Interner()))
    return n, time.perf_counter() - t0


def _tree_rss(pids: list[int]) -> int:
    import psutil

    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total


def _children_rss() -> tuple[int, list[int]]:
    import psutil

    kids = psutil.Process().children(recursive=True)
    pids = [p.pid for p in kids]
    return _tree_rss(pids), pids


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def bench_dask(workers: int, blobs: dict[int, bytes]) -> dict[str, float]:
    from distributed import Client, LocalCluster

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    )
    client = Client(cluster)
    client.submit(_noop, 1, pure=False).result()
    out["start"] = time.perf_counter() - t0
    time.sleep(1.0)
    out["idle_rss"], _ = _children_rss()
    dt, _ = _timed(lambda: client.gather(client.map(_noop, range(NOOPS), pure=False)))
    out["per_task_us"] = dt / NOOPS * 1e6
    for n, blob in blobs.items():

        def trip(blob: bytes = blob) -> tuple[int, float]:
            f = client.scatter(blob)
            return tuple(client.submit(_unpacked, f, pure=False).result())  # type: ignore[return-value]

        trip()  # the first carries the import
        dt, (got, inside) = _timed(trip)
        assert got == n
        out[f"trip_{n}"] = dt - inside  # the engine's part: the unpacking is the same in both
    pids = client.run(_imports_model)
    out["worker_rss"] = _tree_rss(list(pids.values())) / len(pids)
    out["all_rss"], _ = _children_rss()
    dt, _ = _timed(lambda: (client.close(), cluster.close()))
    out["stop"] = dt
    return out


def bench_ray(workers: int, blobs: dict[int, bytes]) -> dict[str, float]:
    import ray

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.getcwd()}},
    )
    noop = ray.remote(_noop)
    ray.get(noop.remote(1))
    out["start"] = time.perf_counter() - t0
    time.sleep(1.0)
    out["idle_rss"], _ = _children_rss()
    dt, _ = _timed(lambda: ray.get([noop.remote(i) for i in range(NOOPS)]))
    out["per_task_us"] = dt / NOOPS * 1e6
    unpacked = ray.remote(_unpacked)
    for n, blob in blobs.items():

        def trip(blob: bytes = blob) -> tuple[int, float]:
            ref = ray.put(blob)
            return tuple(ray.get(unpacked.remote(ref)))  # type: ignore[return-value]

        trip()
        dt, (got, inside) = _timed(trip)
        assert got == n
        out[f"trip_{n}"] = dt - inside
    imp = ray.remote(_imports_model)
    pids = set(ray.get([imp.remote() for _ in range(workers * 4)]))
    out["worker_rss"] = _tree_rss(list(pids)) / max(1, len(pids))
    out["all_rss"], _ = _children_rss()
    dt, _ = _timed(ray.shutdown)
    out["stop"] = dt
    return out


def frontier(sizes: list[int]) -> dict[int, tuple[bytes, float, float]]:
    """Worlds of ``large``'s first levels, packed: size → (blob, pack s, unpack s)."""
    from model.tables import REFERENCE
    from simulations.engines.bounds import BOUNDS
    from simulations.engines.cluster import Interner, pack, unpack
    from simulations.engines.explore import explore

    ex = explore(REFERENCE, BOUNDS["large"], max_states=max(sizes) + 1, checks=[], witnesses=[])
    out = {}
    for n in sizes:
        worlds = ex.worlds[-n:]
        t_pack, blob = _timed(lambda worlds=worlds: pack(worlds))
        t_unpack, back = _timed(lambda blob=blob: unpack(blob, Interner()))
        assert back == worlds
        out[n] = (blob, t_pack, t_unpack)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--engines", default="dask,ray")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    sizes = [1000, 10000]
    packed = frontier(sizes)
    for n, (blob, tp, tu) in packed.items():
        print(
            f"frontier batch of {n:,} worlds: {len(blob):,} bytes ({len(blob) / n:.0f} B/world), "
            f"pack {tp * 1e3:.1f} ms, unpack {tu * 1e3:.1f} ms",
            file=sys.stderr,
        )
    blobs = {n: b for n, (b, _, _) in packed.items()}
    rows = []
    for name in args.engines.split(","):
        fn = {"dask": bench_dask, "ray": bench_ray}[name]
        try:
            r = fn(args.workers, blobs)
        except ImportError as e:
            print(f"{name}: not installed ({e})", file=sys.stderr)
            continue
        rows.append((name, r))
        print(name, r, file=sys.stderr)
    mib = 1 << 20
    print(
        "| engine | start-up s | stop s | per no-op task µs | 10³-world batch round trip ms "
        "(unpacking not counted) | 10⁴-world batch, same | RSS of all its processes, idle MiB | "
        "per worker with the model imported MiB | all, after MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['start']:.2f} | {r['stop']:.2f} | {r['per_task_us']:.0f} | "
            f"{r['trip_1000'] * 1e3:.1f} | {r['trip_10000'] * 1e3:.1f} | "
            f"{r['idle_rss'] / mib:.0f} | {r['worker_rss'] / mib:.0f} | {r['all_rss'] / mib:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
