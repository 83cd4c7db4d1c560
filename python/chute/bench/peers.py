"""The peers of ``chute bench --compare``: the same batches read by other libraries.

Run by the C++ bench as ``python -m chute.bench.peers --spec spec.json``. The spec holds::

    {"peers": ["zarr", "dask", "tensorstore", "torch"],
     "arrays": [{"name": "inputs", "path": "/data/packed/inputs"}, ...],
     "batches": [[17, 3, ...], ...],   # sample indices along axis 0; the first `warmup` warm up
     "warmup": 1, "trials": 3, "threads": 2, "batch_size": 16, "max_seconds_per_peer": 120}

For every requested peer one JSON object is printed on its own line::

    {"name": "zarr", "status": "ok" | "skipped" | "failed", "note": "...",
     "method": "...", "samples_per_s": {"mean": .., "std": ..}, "gb_per_s": {...},
     "s_per_batch": {...}, "time_to_first_batch_s": .., "batches": .., "trials": ..,
     "cpu_s": .., "cpu_s_per_sample": ..}   # user + system CPU over the timed batches

Array paths may be http(s) URLs (``chute bench --array name=URL``): zarr-python and dask read
them through fsspec (aiohttp), tensorstore through its http key-value store. ``s3://bucket/prefix``
paths are read by zarr-python and dask through obstore (``zarr.storage.ObjectStore``) and by
tensorstore's s3 key-value store, with the endpoint, region and credentials of chute's own
environment variables (``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, ``AWS_REGION``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``).

For volume crops the spec also has ``"workload": "volume"``, ``"volume"`` (the
dataset folder, crop ``size``, ``channels``, the Zarr paths) and ``"crops"``: per batch, the rows
``[x, y, z, transform_id]`` chute read. The peers then read the same crops with the same
transforms (``np.flip(np.transpose(crop, axes), flips)``, the table of chute.cube_symmetries):
``torch`` (a map-style Dataset doing h5py ``read_direct`` of each crop + NumPy transform, in a
DataLoader with ``threads`` worker processes: the users' pattern), ``dali`` (NVIDIA DALI's CPU
pipeline on the .npy form: ``fn.readers.numpy`` with ROI, ``fn.transpose``, ``fn.flip``; a
channels-first .npy is transposed to channels last first) and ``h5py`` (whole-crop ``read_direct`` in one thread: the floor). The HDF5 file
(``volume.h5``: ``Nbody``, ``Hydro``, contiguous) and the .npy files are written from the Zarr
form with h5py / NumPy when the folder lacks them.

For weather windows (``chute bench STORE --windows``) the spec has ``"workload": "windows"``,
``"windows"`` (the store, input and target variables, forcings, computed forcings, statics, levels, input and
target offsets in store steps, the statistics group, ``normalise``, ``channels_last``, dtype) and
``"batches"`` hold each sample's time index. ``xarray`` then builds the same inputs and targets
the graph-ufs way: ``xarray.open_zarr`` (dask, CF-decoded), ``isel`` of each step, normalise
with the statistics, ``to_stacked_array`` of variables and levels, ``.values``, concatenate the
steps, forcings, computed forcings (the formulas of computed_forcings.h written again with NumPy
on xarray's decoded dates) and statics, cast.

For weather windows over many files (the spec's ``"windows"`` has ``"members"``, in time
order, and ``"many_files"``: the time rule and channel names of FourCastNet-style members),
``xarray`` opens them with ``open_mfdataset`` (nested along time, ``compat="override"``), and
``h5py`` is FourCastNet's own loader: a map-style Dataset opening each HDF5/NetCDF-4 member once
per DataLoader worker process and reading each step with h5py (a stacked ``fields`` array with
the channel list in one read, or one read per variable, CF-unpacked), normalised with the
statistics group, in a DataLoader with ``threads`` workers.

For anemoi datasets (``chute bench STORE --anemoi``) the spec has ``"workload": "anemoi"``,
``"anemoi"`` (the store, variables, ``multistep_input``, ``rollout``, ``timeincrement``,
``normalise``, dtype, ``variables_first``) and ``"batches"`` hold each sample's reference date.
``anemoi`` runs anemoi_peer.py in the environment that has anemoi-datasets (zarr-python 2:
``$CHUTE_ANEMOI_PYTHON`` or the checkout's ``.venv-anemoi``): open_dataset in worker processes,
each building whole batches as anemoi-training's workers do; ``tensorstore`` reads each sample's
dates as concurrent futures and rearranges, normalises and casts with NumPy.

A peer whose package is missing is "skipped" with a note. Setting the environment variable
``CHUTE_BENCH_HIDE_PEERS=tensorstore,torch`` makes those peers behave as if not installed (for
tests). The helper needs NumPy and the peers' own packages only, not chute's extension.
"""

from __future__ import annotations

import argparse
import contextlib
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
VOLUME_PEERS = ("torch", "dali", "h5py")
METHODS = {
    "zarr": "zarr-python, one call per sample and array",
    "dask": "dask.array.from_zarr, one compute per batch (threaded scheduler)",
    "tensorstore": "tensorstore, all samples of a batch read as concurrent futures",
    "torch": "torch DataLoader (map-style Dataset reading samples with zarr-python)",
}
VOLUME_METHODS = {
    "torch": "torch DataLoader, worker processes; map-style Dataset: h5py read_direct per crop + "
    "NumPy transpose/flip",
    "dali": "NVIDIA DALI CPU pipeline (device_id=None): fn.readers.numpy with ROI on the "
    "channels-last .npy, fn.transpose, fn.flip",
    "h5py": "h5py read_direct of each crop + NumPy transpose/flip, one thread (the floor)",
}
WINDOW_PEERS = ("xarray", "h5py")
WINDOW_METHODS = {
    "xarray": "xarray.open_zarr (many files: open_mfdataset) + dask, the graph-ufs way: isel per "
    "step, normalise, to_stacked_array, .values, cast",
    "h5py": "torch DataLoader, worker processes; map-style Dataset opening each HDF5/NetCDF-4 "
    "member with h5py once per worker and reading each step's channels (FourCastNet's loader)",
}
ANEMOI_PEERS = ("anemoi", "tensorstore")
ANEMOI_METHODS = {
    "anemoi": "anemoi-datasets open_dataset in worker processes, each building whole batches "
    "(anemoi-training's pattern): data[start:end:timeincrement], rearrange, normalise, cast",
    "tensorstore": "tensorstore, every sample of a batch read as concurrent futures "
    "(data[start:end:timeincrement]), then rearrange, normalise, cast with NumPy",
}
ANEMOI_REQUIRES = {"anemoi": ("numpy",), "tensorstore": ("numpy", "tensorstore", "zarr")}
WINDOW_REQUIRES = {
    "xarray": ("numpy", "xarray", "dask", "zarr"),
    "h5py": ("numpy", "h5py", "torch"),
}
REQUIRES = {
    "zarr": ("numpy", "zarr"),
    "dask": ("numpy", "zarr", "dask.array"),
    "tensorstore": ("numpy", "tensorstore"),
    "torch": ("numpy", "zarr", "torch"),
}
VOLUME_REQUIRES = {
    "torch": ("numpy", "h5py", "torch"),
    "dali": ("numpy", "nvidia.dali"),
    "h5py": ("numpy", "h5py"),
}


class PeerUnavailable(Exception):
    """A package the peer needs is not installed."""


def _require(peer: str, requires: dict | None = None) -> None:
    requires = REQUIRES if requires is None else requires
    hidden = {p.strip() for p in os.environ.get("CHUTE_BENCH_HIDE_PEERS", "").split(",")}
    if peer in hidden:
        raise PeerUnavailable(
            f"{_package(requires[peer][-1])} is not installed (hidden by CHUTE_BENCH_HIDE_PEERS)"
        )
    for module in requires[peer]:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise PeerUnavailable(f"{_package(module)} is not installed ({error})") from None


def _package(module: str) -> str:
    """The name users know a module's package by."""
    if module == "nvidia.dali":
        return "nvidia.dali (pip install nvidia-dali-cuda120: about 1 GB, never in tests)"
    return module.split(".")[0]


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


def _s3_parts(url: str) -> tuple[str, str]:
    bucket, _, prefix = url[len("s3://") :].partition("/")
    return bucket, prefix.strip("/")


def _s3_endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")


def _open_zarr(path: str):
    """zarr-python's array at a local folder, an http(s) URL (fsspec) or s3:// (obstore)."""
    import zarr

    if not path.startswith("s3://"):
        return zarr.open_array(path, mode="r")
    try:
        from obstore.store import S3Store
    except ImportError as error:
        raise PeerUnavailable(
            f"obstore is not installed ({error}): zarr-python reads s3:// with it"
        )
    bucket, prefix = _s3_parts(path)
    options = {"region": os.environ.get("AWS_REGION", "us-east-1")}
    endpoint = _s3_endpoint()
    if endpoint:
        options["endpoint"] = endpoint
        options["client_options"] = {"allow_http": endpoint.startswith("http://")}
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        options["access_key_id"] = os.environ["AWS_ACCESS_KEY_ID"]
        options["secret_access_key"] = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        if os.environ.get("AWS_SESSION_TOKEN"):
            options["session_token"] = os.environ["AWS_SESSION_TOKEN"]
    else:
        options["skip_signature"] = True
    store = zarr.storage.ObjectStore(S3Store(bucket, prefix=prefix, **options), read_only=True)
    return zarr.open_array(store, mode="r")


def _zarr_arrays(spec: dict) -> list:
    return [_open_zarr(a["path"]) for a in spec["arrays"]]


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

    arrays = [da.from_zarr(_open_zarr(a["path"])) for a in spec["arrays"]]
    threads = int(spec["threads"])

    def batches() -> Iterator:
        for indices in spec["batches"]:
            selection = np.asarray(indices, dtype=np.int64)
            yield dask.compute(
                *[array[selection] for array in arrays], scheduler="threads", num_workers=threads
            )

    return batches(), _sample_nbytes(arrays)


def _url_exists(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=30):
            return True
    except urllib.error.HTTPError:
        return False


def _tensorstore_spec(path: str) -> dict:
    import tensorstore as ts

    """A local array folder, an http(s) URL (tensorstore's http key-value store) or s3://."""
    if path.startswith("s3://"):
        bucket, prefix = _s3_parts(path)
        kvstore = {"driver": "s3", "bucket": bucket, "path": prefix + "/"}
        kvstore["aws_region"] = os.environ.get("AWS_REGION", "us-east-1")
        if _s3_endpoint():
            kvstore["endpoint"] = _s3_endpoint()
        if not os.environ.get("AWS_ACCESS_KEY_ID"):
            kvstore["aws_credentials"] = {"type": "anonymous"}
        probe = ts.KvStore.open(kvstore).result()
        driver = "zarr3" if probe.read("zarr.json").result().state == "value" else "zarr"
        return {"driver": driver, "kvstore": kvstore}
    if path.startswith(("http://", "https://")):
        base = path.rstrip("/")
        driver = "zarr3" if _url_exists(base + "/zarr.json") else "zarr"
        return {"driver": driver, "kvstore": {"driver": "http", "base_url": base}}
    driver = "zarr3" if (Path(path) / "zarr.json").exists() else "zarr"
    return {"driver": driver, "kvstore": {"driver": "file", "path": path}}


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
    arrays = [
        ts.open(_tensorstore_spec(entry["path"]), read=True, context=context).result()
        for entry in spec["arrays"]
    ]

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

        return _open_zarr(self.paths[0]).shape[0]

    def __getitem__(self, index: int):

        if self.arrays is None:  # opened lazily, once per worker process
            self.arrays = [_open_zarr(p) for p in self.paths]
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


# --- Volume crops: the same crops with the same transforms -------------------------------------


def _transform_table() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """chute.cube_symmetries() without importing chute: rotations first, then the rest."""
    import itertools

    rows = []
    for axes in itertools.permutations((0, 1, 2)):
        inversions = sum(axes[i] > axes[j] for i in range(3) for j in range(i + 1, 3))
        for mask in range(8):
            flips = tuple(k for k in range(3) if mask >> k & 1)
            rows.append(((-1) ** (inversions + len(flips)), axes, flips))
    return [(a, f) for d, a, f in rows if d > 0] + [(a, f) for d, a, f in rows if d < 0]


TRANSFORMS = _transform_table()


def _transform_channels_first(crop, transform: int):
    """(C, x, y, z) crop -> np.flip(np.transpose) on the spatial axes, as a contiguous array."""
    import numpy as np

    axes, flips = TRANSFORMS[int(transform)]
    y = np.transpose(crop, (0, *[a + 1 for a in axes]))
    return np.ascontiguousarray(np.flip(y, axis=tuple(f + 1 for f in flips)))


def _volume_h5(spec: dict) -> str:
    """The folder's volume.h5 (Nbody, Hydro), written from its Zarr form when missing."""
    import h5py

    volume = spec["volume"]
    path = Path(volume["folder"]) / "volume.h5"
    if path.exists():
        return str(path)
    import zarr

    partial = path.with_suffix(".h5.partial")
    with h5py.File(partial, "w") as out:
        for name, source in zip(("Nbody", "Hydro"), volume["zarr"]):
            array = zarr.open_array(source, mode="r")
            dataset = out.create_dataset(name, shape=array.shape, dtype=array.dtype)
            for c in range(array.shape[0]):
                dataset[c] = array[c]
    partial.rename(path)
    return str(path)


def _volume_npy(spec: dict) -> list[str]:
    """The folder's input.npy and target.npy (channels last, as `make-dataset volume --npy`
    writes them; channels-first files are read as they are), written from Zarr when missing."""
    import numpy as np

    volume = spec["volume"]
    paths = []
    for name, source in zip(("input", "target"), volume["zarr"]):
        path = Path(volume["folder"]) / f"{name}.npy"
        if not path.exists():
            import zarr

            array = zarr.open_array(source, mode="r")
            partial = path.with_suffix(".partial.npy")
            out = np.lib.format.open_memmap(
                partial, mode="w+", dtype=array.dtype, shape=(*array.shape[1:], array.shape[0])
            )
            for c in range(array.shape[0]):
                out[..., c] = array[c]
            out.flush()
            del out
            partial.rename(path)
        paths.append(str(path))
    return paths


def _crop_nbytes(spec: dict) -> int:
    size = int(spec["volume"]["size"])
    return sum(int(c) for c in spec["volume"]["channels"]) * size**3 * 4


def _read_crop_h5(datasets, row, size):
    import numpy as np

    x, y, z, transform = (int(v) for v in row)
    out = []
    for dataset in datasets:
        crop = np.empty((dataset.shape[0], size, size, size), dtype=dataset.dtype)
        dataset.read_direct(crop, np.s_[:, x : x + size, y : y + size, z : z + size])
        out.append(_transform_channels_first(crop, transform))
    return tuple(out)


class _H5Crops:
    """The users' map-style Dataset: item i is crop row i, read with h5py and rotated."""

    def __init__(self, path: str, rows: list, size: int):
        self.path, self.rows, self.size = path, rows, size
        self.datasets = None

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        if self.datasets is None:  # opened lazily, once per worker process
            import h5py

            handle = h5py.File(self.path, "r")
            self.datasets = [handle["Nbody"], handle["Hydro"]]
        return _read_crop_h5(self.datasets, self.rows[index], self.size)


def _read_volume_torch(spec: dict) -> tuple[Iterator, int]:
    from torch.utils.data import DataLoader

    path = _volume_h5(spec)
    rows, batches = [], []
    for batch in spec["crops"]:
        batches.append(list(range(len(rows), len(rows) + len(batch))))
        rows.extend(batch)
    dataset = _H5Crops(path, rows, int(spec["volume"]["size"]))
    loader = DataLoader(dataset, batch_sampler=batches, num_workers=int(spec["threads"]))
    return iter(loader), _crop_nbytes(spec)


def _read_volume_h5py(spec: dict) -> tuple[Iterator, int]:
    import h5py
    import numpy as np

    path = _volume_h5(spec)
    size = int(spec["volume"]["size"])

    def batches() -> Iterator:
        with h5py.File(path, "r") as handle:
            datasets = [handle["Nbody"], handle["Hydro"]]
            for batch in spec["crops"]:
                crops = [_read_crop_h5(datasets, row, size) for row in batch]
                yield tuple(np.stack([c[k] for c in crops]) for k in range(len(datasets)))

    return batches(), _crop_nbytes(spec)


def _read_volume_dali(spec: dict) -> tuple[Iterator, int]:
    import itertools

    import numpy as np
    from nvidia.dali import fn, pipeline_def

    files = _volume_npy(spec)
    channels = [int(c) for c in spec["volume"]["channels"]]
    channels_last = {
        path: np.load(path, mmap_mode="r").shape[-1] == c for path, c in zip(files, channels)
    }
    size = int(spec["volume"]["size"])
    batches = spec["crops"]
    batch_size = max(len(b) for b in batches)
    perms = list(itertools.permutations((0, 1, 2)))

    def columns():
        # Per batch: ROI starts/ends (D, H, W of the channels-last file), the transform's
        # permutation (an index: fn.transpose takes one `perm` per operator, so each of the six
        # is a branch of a per-sample conditional) and its three flips.
        for batch in batches:
            starts = [np.array(row[:3], dtype=np.int32) for row in batch]
            ends = [s + size for s in starts]
            perm = [np.array(perms.index(TRANSFORMS[int(r[3])][0]), np.int32) for r in batch]
            flips = [
                [np.array(int(k in TRANSFORMS[int(r[3])][1]), dtype=np.int32) for r in batch]
                for k in range(3)
            ]
            yield (starts, ends, perm, *flips)

    def transpose(volume, perm):
        if perm == 0:
            out = fn.transpose(volume, perm=[*perms[0], 3], transpose_layout=False)
        elif perm == 1:
            out = fn.transpose(volume, perm=[*perms[1], 3], transpose_layout=False)
        elif perm == 2:
            out = fn.transpose(volume, perm=[*perms[2], 3], transpose_layout=False)
        elif perm == 3:
            out = fn.transpose(volume, perm=[*perms[3], 3], transpose_layout=False)
        elif perm == 4:
            out = fn.transpose(volume, perm=[*perms[4], 3], transpose_layout=False)
        else:
            out = fn.transpose(volume, perm=[*perms[5], 3], transpose_layout=False)
        return out

    @pipeline_def(
        batch_size=batch_size,
        num_threads=int(spec["threads"]),
        device_id=None,
        prefetch_queue_depth=2,
        enable_conditionals=True,
    )
    def pipeline():
        start, end, perm, flip_d, flip_h, flip_w = fn.external_source(
            source=columns(), num_outputs=6, batch=True, cycle=False
        )
        outputs = []
        for path in files:
            volume = fn.readers.numpy(
                files=[path] * batch_size,
                roi_start=start,
                roi_end=end,
                roi_axes=(0, 1, 2) if channels_last[path] else (1, 2, 3),
                random_shuffle=False,
                name=f"reader_{Path(path).stem}",
            )
            if not channels_last[path]:  # a channels-first .npy: to the DALI users' layout
                volume = fn.transpose(volume, perm=[1, 2, 3, 0], transpose_layout=False)
            volume = fn.reshape(volume, layout="DHWC")
            volume = transpose(volume, perm)
            outputs.append(fn.flip(volume, depthwise=flip_d, vertical=flip_h, horizontal=flip_w))
        return tuple(outputs)

    pipe = pipeline()
    pipe.build()

    def batches_out() -> Iterator:
        for _ in batches:
            outputs = pipe.run()
            yield tuple(np.stack([np.asarray(t) for t in out]) for out in outputs)

    return batches_out(), _crop_nbytes(spec)


LEVEL_DIMS = ("level", "pressure_level", "isobaricInhPa", "plev", "lev")
TIME_DIMS = ("time", "valid_time")


def _read_windows_xarray(spec: dict) -> tuple[Iterator, int]:
    """Weather windows the graph-ufs way; `batches` hold each sample's time index."""
    import numpy as np
    import xarray as xr
    import zarr

    w = spec["windows"]
    members = w.get("members")
    if members and (w.get("many_files") or {}).get("channels"):
        raise PeerUnavailable(
            "xarray: the members hold a stacked channel array without coordinates (the "
            "FourCastNet layout); xarray has no names for its channels (see the h5py peer)"
        )
    if members:
        # The users' way over many files, with the settings that keep it tractable.
        engine = "zarr" if all(_is_zarr(m) for m in members) else None
        ds = xr.open_mfdataset(
            members, combine="nested", concat_dim="time", data_vars="minimal",
            coords="minimal", compat="override", join="override", engine=engine,
        )  # fmt: skip
    else:
        ds = xr.open_zarr(w["store"])
    time_dim = next(d for d in TIME_DIMS if d in ds.dims)
    level_dim = next((d for d in LEVEL_DIMS if d in ds.dims), None)
    level_positions = None
    if w.get("levels") and level_dim:
        stored = ds[level_dim].values.tolist()
        level_positions = [stored.index(value) for value in w["levels"]]
        ds = ds.isel({level_dim: level_positions})

    def statistic(kind: str, name: str) -> xr.DataArray | float:
        if w.get("statistics"):
            values = np.asarray(zarr.open_array(f"{w['statistics']}/{kind}/{name}", mode="r")[...])
        elif w.get("normalise"):
            values = np.asarray(zarr.open_array(f"{w['store']}/{kind}/{name}", mode="r")[...])
        else:
            return 0.0 if kind == "mean" else 1.0
        if level_dim and level_dim in ds[name].dims:
            if level_positions is not None:
                values = values[level_positions]
            return xr.DataArray(values, dims=(level_dim,))
        return float(values.reshape(-1)[0])

    def normalised(names: Sequence[str]) -> tuple[xr.Dataset, xr.Dataset]:
        mean = xr.Dataset({name: statistic("mean", name) for name in names})
        std = xr.Dataset({name: statistic("std", name) for name in names})
        return mean, std

    inputs = list(w["variables"])
    targets = list(w.get("target_variables") or inputs)
    forcings, statics = list(w.get("forcings", [])), list(w.get("statics", []))
    stats = {tuple(names): normalised(names) for names in (inputs, targets, forcings) if names}
    dtype = np.dtype(_output_dtype(w.get("dtype", "float32")))
    grid_dims = [d for d in ds[inputs[0]].dims if d not in (time_dim, level_dim)]

    def stacked(names: Sequence[str], times: np.ndarray) -> np.ndarray:
        mean, std = stats[tuple(names)]
        window = (ds[list(names)].isel({time_dim: times}) - mean) / std
        return window.to_stacked_array("channel", sample_dims=[time_dim, *grid_dims]).values

    static_planes = None
    if statics:
        mean, std = normalised(statics)
        planes = [
            ((ds[n] - mean[n]) / std[n]).values.reshape(*ds[n].shape[-2:], -1) for n in statics
        ]
        static_planes = np.concatenate(planes, axis=-1)

    computed = list(w.get("computed_forcings", []))
    lat_name = next((d for d in grid_dims if d in ("lat", "latitude")), grid_dims[0])
    lon_name = next((d for d in grid_dims if d in ("lon", "longitude")), grid_dims[-1])

    def computed_planes(times: np.ndarray) -> np.ndarray:
        """(samples, lat, lon, len(computed)) at the decoded dates of `times` (xarray's)."""
        dates = ds[time_dim].isel({time_dim: times}).values.astype("datetime64[s]")
        lat = np.asarray(ds[lat_name].values, dtype=np.float64)
        lon = np.asarray(ds[lon_name].values, dtype=np.float64)
        planes = [_computed_forcing(name, dates, lat, lon) for name in computed]
        return np.stack(planes, axis=-1)

    def window(index: np.ndarray) -> tuple:
        parts = [stacked(inputs, index + offset) for offset in w["input_offsets"]]
        if forcings:
            parts += [stacked(forcings, index + offset) for offset in w["target_offsets"]]
        if computed:
            parts += [computed_planes(index + offset) for offset in w["target_offsets"]]
        if static_planes is not None:
            parts.append(np.broadcast_to(static_planes, (len(index), *static_planes.shape)))
        x = np.concatenate(parts, axis=-1).astype(dtype)
        y = np.concatenate(
            [stacked(targets, index + offset) for offset in w["target_offsets"]], axis=-1
        ).astype(dtype)
        if not w.get("channels_last", True):
            x, y = np.moveaxis(x, -1, 1), np.moveaxis(y, -1, 1)
        return x, y

    first = window(np.asarray(spec["batches"][0], dtype=np.int64))
    sample_nbytes = (first[0].nbytes + first[1].nbytes) // max(1, first[0].shape[0])

    def batches() -> Iterator:
        yield first
        for index in spec["batches"][1:]:
            yield window(np.asarray(index, dtype=np.int64))

    return batches(), sample_nbytes


def _is_zarr(path: str) -> bool:
    return path.rstrip("/").endswith(".zarr") or os.path.isdir(path)


class _H5Windows:
    """FourCastNet's map-style Dataset over per-year files, generalised to the bench's windows:
    item t is the window at joined time t; each member file is opened once per worker process
    and each step is one h5py read of the member holding it (a stacked `fields[T, C, H, W]`
    read with the channel list, or one read per variable of a NetCDF-4 file)."""

    def __init__(self, w: dict):
        import h5py
        import numpy as np

        self.members = list(w["members"])
        many = w.get("many_files") or {}
        self.channel_array = many.get("channel_array") or "fields"
        channels = list(many.get("channels") or [])
        self.inputs = list(w["variables"])
        self.targets = list(w.get("target_variables") or self.inputs)
        self.input_offsets = list(w["input_offsets"])
        self.target_offsets = list(w["target_offsets"])
        self.channels_last = bool(w.get("channels_last", True))
        self.dtype = np.dtype(_output_dtype(w.get("dtype", "float32")))
        self.levels = list(w.get("levels") or [])
        starts, total = [], 0
        self.level_index: dict[str, Any] = {}
        self.scale: dict[str, tuple[float, float]] = {}
        for number, path in enumerate(self.members):
            with h5py.File(path, "r") as f:
                first = f[self.channel_array] if channels else f[self.inputs[0]]
                starts.append(total)
                total += int(first.shape[0])
                if number == 0 and not channels:
                    self._describe(f)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.length = total
        if channels:
            position = {name: i for i, name in enumerate(channels)}
            self.channel_of = {n: position[n] for n in {*self.inputs, *self.targets}}
        else:
            self.channel_of = None
        self.stats = {tuple(n): _window_statistics(w, n, self.level_index.get) for n in
                      (self.inputs, self.targets)}  # fmt: skip
        self.files: list | None = None

    def _describe(self, f) -> None:
        """Level positions and CF packing of the variables, from the first member."""
        import numpy as np

        for name in {*self.inputs, *self.targets}:
            variable = f[name]
            attrs = variable.attrs
            if "scale_factor" in attrs or "add_offset" in attrs:
                fill = attrs.get("_FillValue")
                self.scale[name] = (
                    float(np.asarray(attrs.get("scale_factor", 1.0)).ravel()[0]),
                    float(np.asarray(attrs.get("add_offset", 0.0)).ravel()[0]),
                    None if fill is None else np.asarray(fill).ravel()[0],
                )
            if variable.ndim == 4 and self.levels:
                level = next(d for d in LEVEL_DIMS if d in f)
                stored = f[level][...].tolist()
                self.level_index[name] = [stored.index(v) for v in self.levels]

    def __len__(self) -> int:
        return self.length

    def _step(self, t: int, names: list[str]):
        import numpy as np

        member = int(np.searchsorted(self.starts, t, side="right")) - 1
        local = t - int(self.starts[member])
        f = self.files[member]
        if self.channel_of is not None:
            wanted = [self.channel_of[n] for n in names]
            order = sorted(set(wanted))
            # One read, as FourCastNet's `fields[local, in_channels]`; a run of channels as a
            # slice (h5py's fast path: a list selection is several times slower).
            contiguous = order == list(range(order[0], order[-1] + 1))
            pick = slice(order[0], order[-1] + 1) if contiguous else order
            block = f[self.channel_array][local, pick]
            return block[[order.index(c) for c in wanted]].astype(np.float32)
        planes = []
        for name in names:
            variable = f[name]
            if name in self.level_index:
                plane = variable[local, self.level_index[name]]
            else:
                plane = variable[local]
            if name in self.scale:  # CF packing, as netCDF4 and xarray unpack it
                scale, offset, fill = self.scale[name]
                raw = np.asarray(plane)
                plane = raw.astype(np.float32) * np.float32(scale) + np.float32(offset)
                if fill is not None:
                    plane[raw == fill] = np.nan
            plane = np.asarray(plane, dtype=np.float32)
            planes.append(plane.reshape(-1, *plane.shape[-2:]))
        return np.concatenate(planes, axis=0)

    def _window(self, t: int, names: list[str], offsets: list[int]):
        import numpy as np

        mean, std = self.stats[tuple(names)]
        steps = [(self._step(t + o, names) - mean) / std for o in offsets]
        out = np.concatenate(steps, axis=0)  # (channels, lat, lon)
        if self.channels_last:
            out = np.moveaxis(out, 0, -1)
        return np.ascontiguousarray(out.astype(self.dtype))

    def __getitem__(self, t: int):
        if self.files is None:  # opened lazily, once per worker process
            import h5py

            self.files = [h5py.File(path, "r") for path in self.members]
        return (self._window(t, self.inputs, self.input_offsets),
                self._window(t, self.targets, self.target_offsets))  # fmt: skip


def _window_statistics(w: dict, names: list[str], levels: Callable[[str], list[int] | None]):
    """(mean, std) per channel of one step of `names`, shaped (channels, 1, 1); (0, 1) without
    statistics. A `chute stats` group holds mean/<name> and std/<name> per stored level;
    levels(name) gives the positions of the selected ones (None: a variable without levels)."""
    import numpy as np

    if not w.get("statistics"):
        return np.float32(0.0), np.float32(1.0)
    import zarr

    parts: dict[str, list] = {"mean": [], "std": []}
    for kind, found in parts.items():
        for name in names:
            values = np.asarray(zarr.open_array(f"{w['statistics']}/{kind}/{name}", mode="r")[...])
            positions = levels(name)
            found.append(values.reshape(-1)[positions if positions is not None else slice(0, 1)])
    mean, std = (np.concatenate(parts[k]).astype(np.float32)[:, None, None] for k in parts)
    return mean, std


def _read_windows_h5py(spec: dict) -> tuple[Iterator, int]:
    """FourCastNet's loader (a per-file h5py Dataset in a DataLoader with worker processes) on
    the same windows; `batches` hold each sample's time index."""
    from torch.utils.data import DataLoader

    w = spec["windows"]
    if not w.get("members"):
        w = {**w, "members": [w["store"]]}
    if any(_is_zarr(m) for m in w["members"]):
        raise PeerUnavailable("h5py reads HDF5 and NetCDF-4 members, not Zarr stores")
    extra = [k for k in ("forcings", "computed_forcings", "statics") if w.get(k)]
    if extra or w.get("normalise"):
        raise PeerUnavailable(
            f"the h5py peer reads variables only (not {', '.join(extra) or 'normalise'})"
        )
    dataset = _H5Windows(w)
    loader = DataLoader(dataset, batch_sampler=spec["batches"], num_workers=int(spec["threads"]),
                        persistent_workers=False)  # fmt: skip
    iterator = iter(loader)
    first = next(iterator)
    sample_nbytes = (first[0].numpy().nbytes + first[1].numpy().nbytes) // max(1, len(first[0]))

    def batches() -> Iterator:
        yield first
        yield from iterator

    return batches(), sample_nbytes


def _anemoi_python() -> str:
    """The python that has anemoi-datasets: $CHUTE_ANEMOI_PYTHON, else the checkout's
    .venv-anemoi; PeerUnavailable when neither imports anemoi.datasets."""
    import subprocess

    candidates = [os.environ.get("CHUTE_ANEMOI_PYTHON", "")]
    candidates.append(str(Path(__file__).resolve().parents[3] / ".venv-anemoi" / "bin" / "python"))
    for python in candidates:
        if python and Path(python).exists():
            try:
                probe = subprocess.run([python, "-c", "import anemoi.datasets"],
                                       capture_output=True, timeout=120, check=False)  # fmt: skip
            except subprocess.TimeoutExpired:
                continue  # an environment that cannot import it in 2 minutes is not usable
            if probe.returncode == 0:
                return python
    raise PeerUnavailable(
        "anemoi-datasets is not installed in an environment chute can find (set "
        "CHUTE_ANEMOI_PYTHON to a python that imports anemoi.datasets, or create .venv-anemoi "
        "from python/requirements-anemoi.txt)"
    )


def _read_anemoi(spec: dict) -> tuple[Iterator, int]:
    """anemoi-datasets in its own environment (anemoi_peer.py); one stdout line per batch."""
    import subprocess
    import tempfile

    import numpy as np

    python = _anemoi_python()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    script = Path(__file__).with_name("anemoi_peer.py")
    # A pipe left unread could fill and stall the peer: its stderr goes to a file.
    errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed when the batches end
    process = subprocess.Popen([python, str(script), "--spec", f.name], stdout=subprocess.PIPE,
                               stderr=errors, text=True)  # fmt: skip

    def next_result() -> dict | None:
        for line in process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        return None

    def close() -> None:
        process.kill()
        process.wait()
        os.unlink(f.name)
        errors.close()

    head = next_result()
    if head is None:
        process.wait()
        errors.seek(0)
        lines = errors.read().strip().splitlines()
        close()
        raise RuntimeError(f"anemoi_peer.py exited with {process.returncode}: "
                           f"{lines[-1] if lines else 'no output'}")  # fmt: skip

    def batches() -> Iterator:
        try:
            result = head
            while result is not None:
                yield (np.empty((result["samples"], 0)),)
                result = next_result()
        finally:
            close()

    return batches(), head["nbytes"] // max(1, head["samples"])


def _read_anemoi_tensorstore(spec: dict) -> tuple[Iterator, int]:
    import numpy as np
    import tensorstore as ts
    import zarr

    a = spec["anemoi"]
    store = a["store"]
    root = zarr.open_group(store, mode="r")
    stored = list(root.attrs["variables"])
    index = [stored.index(name) for name in a["variables"]]
    mul = add = None
    if a.get("normalise", "mean-std") == "mean-std":
        mean = np.asarray(root["mean"][...], dtype=np.float64)[index]
        stdev = np.asarray(root["stdev"][...], dtype=np.float64)[index]
        mul, add = (1 / stdev).astype(np.float32), (-mean / stdev).astype(np.float32)
    threads = int(spec["threads"])
    context = ts.Context({"data_copy_concurrency": {"limit": threads},
                          "file_io_concurrency": {"limit": max(threads, 4)}})  # fmt: skip
    data = ts.open(_tensorstore_spec(f"{store.rstrip('/')}/data"), read=True,
                   context=context).result()  # fmt: skip
    inc, steps, rollout = int(a["timeincrement"]), int(a["multistep_input"]), int(a["rollout"])
    dtype = np.dtype(_output_dtype(a.get("dtype", "float32")))

    def sample(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.transpose(x[:, index], (0, 2, 3, 1))  # dates ensemble cells variables
        if mul is not None:
            x = x * mul + add
        if a.get("variables_first"):
            x = np.moveaxis(x, -1, 1)
        x = x.astype(dtype)
        return x[:steps], x[steps:]

    def batches() -> Iterator:
        for references in spec["batches"]:
            futures = [data[int(r) - (steps - 1) * inc : int(r) + rollout * inc + 1 : inc].read()
                       for r in references]  # fmt: skip
            samples = [sample(f.result()) for f in futures]
            yield np.stack([s[0] for s in samples]), np.stack([s[1] for s in samples])

    per_date = len(index) * int(data.shape[2]) * int(data.shape[3]) * dtype.itemsize
    return batches(), per_date * (steps + rollout)


def _computed_forcing(name: str, dates: Any, lat: Any, lon: Any) -> Any:
    """A forcing chute computes (src/chute/dataset/computed_forcings.h), written again with NumPy
    dates: (len(dates), len(lat), len(lon)) float32."""
    import numpy as np

    year = dates.astype("datetime64[Y]")
    days_in_year = ((year + 1).astype("datetime64[D]") - year.astype("datetime64[D]")).astype(
        np.float64
    )
    day = (dates - year.astype(dates.dtype)).astype(np.float64) / 86400.0
    hours = (dates - dates.astype("datetime64[D]")).astype(np.float64) / 3600.0
    shape = (len(dates), len(lat), len(lon))
    if name in ("cos_local_time", "sin_local_time"):
        local = 2 * np.pi * (hours[:, None] + lon[None, :] / 15) / 24
        value = np.cos(local) if name.startswith("cos") else np.sin(local)
        return np.broadcast_to(value[:, None, :], shape).astype(np.float32)
    gamma = 2 * np.pi * day / days_in_year
    if name in ("cos_day_of_year", "sin_day_of_year"):
        value = np.cos(gamma) if name.startswith("cos") else np.sin(gamma)
        return np.broadcast_to(value[:, None, None], shape).astype(np.float32)
    if name != "toa_radiation":
        raise ValueError(f"unknown computed forcing {name!r}")
    e0 = (1.000110 + 0.034221 * np.cos(gamma) + 0.001280 * np.sin(gamma)
          + 0.000719 * np.cos(2 * gamma) + 0.000077 * np.sin(2 * gamma))  # fmt: skip
    decl = (0.006918 - 0.399912 * np.cos(gamma) + 0.070257 * np.sin(gamma)
            - 0.006758 * np.cos(2 * gamma) + 0.000907 * np.sin(2 * gamma)
            - 0.002697 * np.cos(3 * gamma) + 0.00148 * np.sin(3 * gamma))  # fmt: skip
    eot = 229.18 * (0.000075 + 0.001868 * np.cos(gamma) - 0.032077 * np.sin(gamma)
                    - 0.014615 * np.cos(2 * gamma) - 0.040849 * np.sin(2 * gamma))  # fmt: skip
    hour_angle = 2 * np.pi * (hours[:, None] + lon[None, :] / 15 + eot[:, None] / 60 - 12) / 24
    phi = np.radians(lat)[None, :, None]
    cos_zenith = (np.sin(phi) * np.sin(decl)[:, None, None]
                  + np.cos(phi) * np.cos(decl)[:, None, None] * np.cos(hour_angle)[:, None, :])  # fmt: skip
    return (1361.0 * e0[:, None, None] * np.maximum(cos_zenith, 0)).astype(np.float32)


def _output_dtype(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return name


WINDOW_READERS: dict[str, Callable[[dict], tuple[Iterator, int]]] = {
    "xarray": _read_windows_xarray,
    "h5py": _read_windows_h5py,
}


ANEMOI_READERS: dict[str, Callable[[dict], tuple[Iterator, int]]] = {
    "anemoi": _read_anemoi,
    "tensorstore": _read_anemoi_tensorstore,
}


VOLUME_READERS: dict[str, Callable[[dict], tuple[Iterator, int]]] = {
    "torch": _read_volume_torch,
    "dali": _read_volume_dali,
    "h5py": _read_volume_h5py,
}


READERS: dict[str, Callable[[dict], tuple[Iterator, int]]] = {
    "zarr": _read_zarr,
    "dask": _read_dask,
    "tensorstore": _read_tensorstore,
    "torch": _read_torch,
}


def _workload_tables(spec: dict) -> tuple[str, dict, dict, tuple, dict]:
    """(workload, methods, readers, peers, requires) for the spec's workload."""
    workload = spec.get("workload", "packed")
    if workload == "volume":
        return workload, VOLUME_METHODS, VOLUME_READERS, VOLUME_PEERS, VOLUME_REQUIRES
    if workload == "windows":
        return workload, WINDOW_METHODS, WINDOW_READERS, WINDOW_PEERS, WINDOW_REQUIRES
    if workload == "anemoi":
        return workload, ANEMOI_METHODS, ANEMOI_READERS, ANEMOI_PEERS, ANEMOI_REQUIRES
    return workload, METHODS, READERS, PEERS, REQUIRES


def measure(peer: str, spec: dict) -> dict:
    """Reads spec's batches with `peer` and returns its result object."""
    workload, methods, readers, known, requires = _workload_tables(spec)
    result: dict[str, Any] = {"name": peer, "method": methods.get(peer, "")}
    if peer not in readers:
        return {
            **result,
            "status": "skipped",
            "note": f"'{peer}' does not read {workload} datasets (peers here: {', '.join(known)})",
        }
    try:
        _require(peer, requires)
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

    _evict_page_cache(spec.get("evict_files", []))
    started = time.perf_counter()
    try:
        iterator, sample_nbytes = readers[peer](spec)
    except PeerUnavailable as error:
        return {**result, "status": "skipped", "note": str(error)}
    times: list[float] = []  # seconds per timed batch
    sizes: list[int] = []  # samples per timed batch
    first_batch_s = 0.0
    stopped_early = False
    cpu_at_first_timed = 0.0  # user + system CPU of this process (every thread)
    try:
        previous = started
        for number, batch in enumerate(iterator):
            now = time.perf_counter()
            if number == 0:
                first_batch_s = now - started
            if number == warmup - 1:
                cpu_at_first_timed = _process_cpu_s()
            if number >= warmup:
                times.append(now - previous)
                sizes.append(int(batch[0].shape[0]))
                if now - started > max_seconds and number + 1 < len(batches):
                    stopped_early = True
                    break
            previous = now
        cpu_s = _process_cpu_s() - cpu_at_first_timed
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
        "cpu_s": cpu_s,
        "cpu_s_per_sample": cpu_s / sum(sizes) if sizes else None,
    }


def _process_cpu_s() -> float:
    """User + system CPU seconds of this process so far, every thread (as chute's bench)."""
    times = os.times()
    return times.user + times.system


def _evict_page_cache(paths: Sequence[str]) -> None:
    """--page-cache cold: drop the dataset's pages (as chute does before its trials)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            # DONTNEED keeps dirty pages: a dataset written just before would stay cached.
            with contextlib.suppress(OSError):
                os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chute.bench.peers",
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
                "method": _workload_tables(spec)[1].get(peer, ""),
                "note": f"{type(error).__name__}: {error}",
            }
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
