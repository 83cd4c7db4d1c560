"""The peers of ``chute bench --compare``: the same batches read by other libraries.

Run by the C++ bench as ``python -m chute.bench_peers --spec spec.json``. The spec holds::

    {"peers": ["zarr", "dask", "tensorstore", "torch"],
     "arrays": [{"name": "inputs", "path": "/data/packed/inputs"}, ...],
     "batches": [[17, 3, ...], ...],   # sample indices along axis 0; the first `warmup` warm up
     "warmup": 1, "trials": 3, "threads": 2, "batch_size": 16, "max_seconds_per_peer": 120}

For every requested peer one JSON object is printed on its own line::

    {"name": "zarr", "status": "ok" | "skipped" | "failed", "note": "...",
     "method": "...", "samples_per_s": {"mean": .., "std": ..}, "gb_per_s": {...},
     "s_per_batch": {...}, "time_to_first_batch_s": .., "batches": .., "trials": ..}

A peer whose package is missing is "skipped" with a note. Setting the environment variable
``CHUTE_BENCH_HIDE_PEERS=tensorstore,torch`` makes those peers behave as if not installed (for
tests). The helper needs NumPy and the peers' own packages only, not chute's extension.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

PEERS = ("zarr", "dask", "tensorstore", "torch")
METHODS = {
    "zarr": "zarr-python, one call per sample and array",
    "dask": "dask.array.from_zarr, one compute per batch (threaded scheduler)",
    "tensorstore": "tensorstore, all samples of a batch read as concurrent futures",
    "torch": "torch DataLoader (map-style Dataset reading samples with zarr-python)",
}
REQUIRES = {
    "zarr": ("numpy", "zarr"),
    "dask": ("numpy", "zarr", "dask.array"),
    "tensorstore": ("numpy", "tensorstore"),
    "torch": ("numpy", "zarr", "torch"),
}


class PeerUnavailable(Exception):
    """A package the peer needs is not installed."""


def _require(peer: str) -> None:
    hidden = {p.strip() for p in os.environ.get("CHUTE_BENCH_HIDE_PEERS", "").split(",")}
    if peer in hidden:
        raise PeerUnavailable(
            f"{REQUIRES[peer][-1].split('.')[0]} is not installed (hidden by "
            "CHUTE_BENCH_HIDE_PEERS)"
        )
    for module in REQUIRES[peer]:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise PeerUnavailable(f"{module.split('.')[0]} is not installed ({error})") from None


def _mean_std(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "std": 0.0}
    mean = sum(values) / len(values)
    if len(values) < 2:
        return {"mean": mean, "std": 0.0}
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return {"mean": mean, "std": math.sqrt(variance)}


def _sample_nbytes(arrays: Sequence[Any]) -> int:
    total = 0
    for array in arrays:
        elements = 1
        for extent in array.shape[1:]:
            elements *= int(extent)
        total += elements * array.dtype.itemsize
    return total


# --- batch readers: each returns an iterator of batches (tuples of numpy arrays) -------------


def _zarr_arrays(spec: dict) -> list:
    import zarr

    return [zarr.open_array(a["path"], mode="r") for a in spec["arrays"]]


def _read_zarr(spec: dict) -> tuple[Iterator, int]:
    import numpy as np

    arrays = _zarr_arrays(spec)

    def batches() -> Iterator:
        for indices in spec["batches"]:
            yield tuple(np.stack([array[int(i)] for i in indices]) for array in arrays)

    return batches(), _sample_nbytes(arrays)


def _read_dask(spec: dict) -> tuple[Iterator, int]:
    import dask
    import dask.array as da
    import numpy as np

    arrays = [da.from_zarr(a["path"]) for a in spec["arrays"]]
    threads = int(spec["threads"])

    def batches() -> Iterator:
        for indices in spec["batches"]:
            selection = np.asarray(indices, dtype=np.int64)
            yield dask.compute(
                *[array[selection] for array in arrays], scheduler="threads", num_workers=threads
            )

    return batches(), _sample_nbytes(arrays)


def _read_tensorstore(spec: dict) -> tuple[Iterator, int]:
    import numpy as np
    import tensorstore as ts

    threads = int(spec["threads"])
    context = ts.Context(
        {
            "data_copy_concurrency": {"limit": threads},
            "file_io_concurrency": {"limit": max(threads, 4)},
        }
    )
    arrays = []
    for entry in spec["arrays"]:
        path = Path(entry["path"])
        driver = "zarr3" if (path / "zarr.json").exists() else "zarr"
        store = ts.open(
            {"driver": driver, "kvstore": {"driver": "file", "path": str(path)}},
            read=True,
            context=context,
        ).result()
        arrays.append(store)

    def batches() -> Iterator:
        for indices in spec["batches"]:
            futures = [[array[int(i)].read() for i in indices] for array in arrays]
            yield tuple(np.stack([f.result() for f in per_array]) for per_array in futures)

    sample_nbytes = 0
    for array in arrays:
        elements = 1
        for extent in array.shape[1:]:
            elements *= int(extent)
        sample_nbytes += elements * array.dtype.numpy_dtype.itemsize
    return batches(), sample_nbytes


class _ZarrSamples:
    """A map-style dataset: one sample = index i along axis 0 of every array (zarr-python)."""

    def __init__(self, paths: Sequence[str]):
        self.paths = list(paths)
        self.arrays: list | None = None

    def __len__(self) -> int:
        import zarr

        return zarr.open_array(self.paths[0], mode="r").shape[0]

    def __getitem__(self, index: int):
        import zarr

        if self.arrays is None:  # opened lazily, once per worker process
            self.arrays = [zarr.open_array(p, mode="r") for p in self.paths]
        return tuple(array[int(index)] for array in self.arrays)


def _read_torch(spec: dict) -> tuple[Iterator, int]:
    from torch.utils.data import DataLoader

    arrays = _zarr_arrays(spec)
    dataset = _ZarrSamples([a["path"] for a in spec["arrays"]])
    batches = [[int(i) for i in b] for b in spec["batches"]]
    threads = int(spec["threads"])
    # The same batches as chute: a batch sampler that yields them; num_workers = chute's threads.
    loader = DataLoader(
        dataset, batch_sampler=batches, num_workers=threads, persistent_workers=False
    )
    return iter(loader), _sample_nbytes(arrays)


READERS: dict[str, Callable[[dict], tuple[Iterator, int]]] = {
    "zarr": _read_zarr,
    "dask": _read_dask,
    "tensorstore": _read_tensorstore,
    "torch": _read_torch,
}


def measure(peer: str, spec: dict) -> dict:
    """Reads spec's batches with `peer` and returns its result object."""
    result: dict[str, Any] = {"name": peer, "method": METHODS.get(peer, "")}
    if peer not in READERS:
        return {
            **result,
            "status": "skipped",
            "note": f"unknown peer '{peer}' (known: {', '.join(PEERS)})",
        }
    try:
        _require(peer)
    except PeerUnavailable as error:
        return {**result, "status": "skipped", "note": str(error)}

    warmup = max(1, int(spec.get("warmup", 1)))
    batches = spec["batches"]
    if len(batches) <= warmup:
        return {
            **result,
            "status": "failed",
            "note": f"needs more than {warmup} batches, got {len(batches)}",
        }
    trials = max(1, int(spec.get("trials", 1)))
    max_seconds = float(spec.get("max_seconds_per_peer", 120))

    started = time.perf_counter()
    iterator, sample_nbytes = READERS[peer](spec)
    times: list[float] = []  # seconds per timed batch
    sizes: list[int] = []  # samples per timed batch
    first_batch_s = 0.0
    stopped_early = False
    try:
        previous = started
        for number, batch in enumerate(iterator):
            now = time.perf_counter()
            if number == 0:
                first_batch_s = now - started
            if number >= warmup:
                times.append(now - previous)
                sizes.append(int(batch[0].shape[0]))
                if now - started > max_seconds and number + 1 < len(batches):
                    stopped_early = True
                    break
            previous = now
    finally:
        del iterator

    # Trials: consecutive equal groups of the timed batches (as chute's trials).
    per_trial = max(1, len(times) // trials)
    samples_per_s, gb_per_s, s_per_batch = [], [], []
    for start in range(0, len(times) - per_trial + 1, per_trial):
        wall = sum(times[start : start + per_trial])
        samples = sum(sizes[start : start + per_trial])
        samples_per_s.append(samples / wall)
        gb_per_s.append(samples * sample_nbytes / wall / 1e9)
        s_per_batch.append(wall / per_trial)
    note = ""
    if stopped_early:
        note = f"stopped after {len(times)} timed batches ({max_seconds:g} s limit)"
    return {
        **result,
        "status": "ok",
        "note": note,
        "samples_per_s": _mean_std(samples_per_s),
        "gb_per_s": _mean_std(gb_per_s),
        "s_per_batch": _mean_std(s_per_batch),
        "time_to_first_batch_s": first_batch_s,
        "batches": len(times),
        "trials": len(samples_per_s),
        "sample_bytes": sample_nbytes,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chute.bench_peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--spec", required=True, help="the JSON spec written by chute bench")
    args = parser.parse_args(argv)
    spec = json.loads(Path(args.spec).read_text())
    for peer in spec.get("peers", PEERS):
        try:
            result = measure(peer, spec)
        except Exception as error:  # noqa: BLE001 - a failing peer must not hide the others
            result = {
                "name": peer,
                "status": "failed",
                "method": METHODS.get(peer, ""),
                "note": f"{type(error).__name__}: {error}",
            }
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
