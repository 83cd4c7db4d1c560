"""The anemoi-datasets peer of ``chute bench --anemoi --compare anemoi``, run in the environment
that has anemoi-datasets (it needs zarr-python 2; ``.venv-anemoi``, or the python named by
``$CHUTE_ANEMOI_PYTHON``) as ``python anemoi_peer.py --spec spec.json``. It imports nothing of
chute.

It reads the spec's batches as anemoi-training does: ``open_dataset(store, select=...)`` in each
of ``threads`` worker processes (a PyTorch DataLoader's workers; this environment has no
PyTorch, so a fork pool), each worker building whole batches (anemoi-training's IterableDataset:
a worker yields complete batches); a sample with reference date ``i`` is
``data[i - (multistep_input - 1)·timeincrement : i + rollout·timeincrement + 1 : timeincrement]``,
rearranged to (dates, ensemble, cells, variables), normalised with the dataset's mean and stdev in
float32 and cast (bfloat16 rounded by hand: its bytes, as ``uint16``). For each batch, in order, one JSON line: ``{"samples": n, "nbytes": bytes}``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys

import numpy as np

_STATE: dict = {}


def _init(spec: dict) -> None:
    from anemoi.datasets import open_dataset

    a = spec["anemoi"]
    ds = open_dataset(a["store"], select=list(a["variables"]))
    _STATE["ds"] = ds
    _STATE["spec"] = a
    if a.get("normalise", "mean-std") == "mean-std":
        stats = ds.statistics
        _STATE["mul"] = (1 / stats["stdev"]).astype(np.float32)
        _STATE["add"] = (-stats["mean"] / stats["stdev"]).astype(np.float32)


def _sample(reference: int) -> tuple[np.ndarray, np.ndarray]:
    a, ds = _STATE["spec"], _STATE["ds"]
    inc, steps, rollout = int(a["timeincrement"]), int(a["multistep_input"]), int(a["rollout"])
    start = reference - (steps - 1) * inc
    x = ds[start : reference + rollout * inc + 1 : inc]  # (dates, variables, ensemble, cells)
    x = np.transpose(x, (0, 2, 3, 1))  # dates ensemble gridpoints variables (anemoi's rearrange)
    if "mul" in _STATE:
        x = x * _STATE["mul"] + _STATE["add"]
    if a.get("variables_first"):
        x = np.moveaxis(x, -1, 1)
    x = _cast(x, a.get("dtype", "float32"))
    return x[:steps], x[steps:]


def _cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """`x` as `dtype`, contiguous. bfloat16 (NumPy has none, and this environment no
    ml_dtypes): its 2-byte patterns as uint16, rounded to nearest even as ml_dtypes and PyTorch
    round, NaN kept NaN, so the batch's bytes and the work of the cast are bfloat16's."""
    if dtype != "bfloat16":
        return np.ascontiguousarray(x, dtype="float16" if dtype == "float16" else "float32")
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def _batch(references: list[int]) -> tuple[int, int]:
    samples = [_sample(int(r)) for r in references]
    inputs = np.stack([s[0] for s in samples])
    targets = np.stack([s[1] for s in samples])
    return len(references), inputs.nbytes + targets.nbytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", required=True)
    args = parser.parse_args(argv)
    with open(args.spec) as f:
        spec = json.load(f)
    workers = max(1, int(spec.get("threads", 1)))
    _init(spec)  # here first: a store that does not open fails once, not in every worker
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, _init, (spec,)) as pool:
        for samples, nbytes in pool.imap(_batch, spec["batches"], chunksize=1):
            print(json.dumps({"samples": samples, "nbytes": nbytes}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
