"""The Loader: deterministic, sharded, prefetched training batches.

    >>> loader = chute.Loader({"inputs": "train/inputs.zarr", "targets": "train/targets.zarr"},
    ...                       batch_size=16, shuffle=True, seed=0, drop_last=True,
    ...                       threads=None, prefetch=2, rank=0, world_size=1)
    >>> len(loader)                  # batches per epoch for this rank
    >>> for batch in loader:         # one epoch; the next `for` is the next epoch
    ...     batch["inputs"]          # numpy.ndarray, zero-copy, (16, lat, lon, channels)
    ...     batch.indices            # numpy int64 array: the sample numbers, in batch order

W2 windows over a Zarr group in xarray layout:

    >>> ds = chute.windows("era5.zarr", variables=["temperature", "2m_temperature"],
    ...                    levels=[500, 850], input_offsets=(-1, 0), target_offsets=(1,))
    >>> loader = chute.Loader(ds, batch_size=16)   # batch["inputs"], batch["targets"]
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from typing_extensions import Self

from . import _chute

__all__ = ["Batch", "Dataset", "Loader", "packed", "windows"]


class Dataset:
    """What a sample is: built by `packed()` (W1) or `windows()` (W2)."""

    def __init__(self, core: Any) -> None:
        self._core = core

    def __len__(self) -> int:
        return self._core.num_samples

    @property
    def outputs(self) -> list[tuple[str, str, tuple[int, ...]]]:
        """(name, dtype name, per-sample shape) of each output, in batch order."""
        return [(name, dtype, tuple(shape)) for name, dtype, shape in self._core.outputs()]

    def channel_names(self, output: str = "inputs") -> list[str]:
        """W2 only: the channel names of `output` in channel order."""
        if not hasattr(self._core, "channel_names"):
            raise TypeError("channel_names() exists for windows() datasets only")
        return self._core.channel_names(0 if output == "inputs" else 1)

    def time_indices(self) -> np.ndarray:
        """W2 only: the time index (position on the store's time axis) of every sample."""
        if not hasattr(self._core, "sample_time"):
            raise TypeError("time_indices() exists for windows() datasets only")
        return np.array([self._core.sample_time(i) for i in range(len(self))], dtype=np.int64)

    def __repr__(self) -> str:
        return f"chute.Dataset({self._core.describe()})"


def packed(arrays: Mapping[str, str]) -> Dataset:
    """W1: named arrays (local paths: an array folder or "group/member") sharing axis 0."""
    if not isinstance(arrays, Mapping) or not arrays:
        raise _chute.InvalidArgumentError("packed() needs a non-empty mapping of name -> path")
    return Dataset(_chute._open_packed([(str(k), str(v)) for k, v in arrays.items()]))


def windows(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    variables: Sequence[str] | None = None,
    *,
    input_variables: Sequence[str] | None = None,
    target_variables: Sequence[str] | None = None,
    forcings: Sequence[str] = (),
    computed_forcings: Sequence[str] = (),
    statics: Sequence[str] = (),
    levels: Sequence[float] | None = None,
    level_indices: Sequence[int] | None = None,
    input_steps: Sequence[Any] | None = None,
    target_steps: Sequence[Any] | None = None,
    input_offsets: Sequence[int] = (-1, 0),
    target_offsets: Sequence[int] = (1,),
    start: Any = None,
    end: Any = None,
    frequency: Any = None,
    gaps: str = "error",
    area: Sequence[float] | None = None,
    grid_shard: tuple[int, int] | None = None,
    channels_last: bool = True,
    dtype: str = "float32",
    decode_cf: bool = True,
    nan: str | float = "keep",
    nan_mask: bool = False,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    mean_suffix: str = "",
    std_suffix: str = "",
    statistics: str | None = None,
    level_coordinate: str = "level",
    time_range: tuple[int, int] | None = None,
) -> Dataset:
    """W2: windows over the time axis of a Zarr group as xarray writes it (ERA5, WeatherBench2).

    `path` may be a list of stores sharing the time/lat/lon coordinates (e.g. pressure levels
    and single levels): their variables are joined; a coordinate that differs is an error
    naming both stores and the coordinate.

    Axes are found by dimension name in any stored order (time/valid_time, level/pressure_level/
    isobaricInhPa, lat/latitude, lon/longitude); values are CF-decoded (fill values -> NaN,
    scale_factor/add_offset) unless decode_cf=False, in the same pass that places them.

    A sample is a time t: "inputs" stacks `input_variables` (or `variables`) at the input steps,
    then `forcings` at the target steps, then `computed_forcings` at the target steps
    (cos_local_time, sin_local_time, cos_day_of_year, sin_day_of_year, toa_radiation: see
    src/chute/dataset/computed_forcings.h for the formulas; not normalised), then `statics`
    (2-D fields, one channel each);
    "targets" stacks `target_variables` (default: the input variables) at the target steps.
    Channel order: for each step, for each variable (in the order given), for each level
    (variables without levels give one channel); `channel_names()` lists them.

    Time: `input_steps`/`target_steps` are offsets from t, as timedeltas ("-6h", "0h") or
    integers counting `frequency` steps (the store's step when no frequency is given);
    `input_offsets`/`target_offsets` are the same in store steps. With `start`/`end`
    (dates, inclusive) or `frequency` ("6h" out of an hourly store), samples are the times
    start + k·frequency whose whole window lies in [start, end]; a time axis missing dates
    inside is refused (gaps="error"), its windows touching a gap are dropped (gaps="skip"), or
    a missing date is read from the closest step present (gaps="nearest", ties to the earlier).
    Without dates, `time_range=(i, j)` limits windows to time indices [i, j).

    Missing values (NaN after decoding): `nan="keep"` passes them on, `nan="error"` raises
    naming the variable, level and time, a number replaces them (physical units, before
    normalisation). `nan_mask=True` appends, for each input channel of a stored variable, a
    channel that is 1 where it was missing and 0 elsewhere ("<channel>/mask").

    Space: `levels` are values of the level coordinate, `level_indices` positions (neither:
    every level); `area=(north, west, south, east)` in degrees reads the box only;
    `grid_shard=(i, n)` reads the i-th of n bands of latitude rows (model-parallel ranks).

    Normalisation x = (x - mean[c]) / std[c] uses `mean`/`std` (one value per channel of one
    step of the input variables) or arrays named variable + `mean_suffix` / `std_suffix` in the
    group (a suffix with `{}` is a pattern: `"mean/{}"` names `mean/temperature`), or the
    arrays mean/<variable> and std/<variable> of the group `statistics` (written by
    `chute stats` / `chute.statistics()`). `dtype` is float32, float16 or bfloat16. Windows that would cross the ends are never sampled.
    """
    from ._array import open_group
    from ._weather import TimeAxis, area_ranges, as_timedelta, shard_rows

    inputs = input_variables if input_variables is not None else variables
    if not inputs:
        raise _chute.InvalidArgumentError("windows() needs variables (or input_variables)")
    paths = [str(path)] if isinstance(path, (str, os.PathLike)) else [str(p) for p in path]
    if not paths:
        raise _chute.InvalidArgumentError("windows() needs a store path (or a list of them)")
    path = paths[0]
    dated = start is not None or end is not None or frequency is not None
    stepped = input_steps is not None or target_steps is not None or bool(computed_forcings)
    needs_coords = dated or stepped or area is not None or grid_shard is not None
    group = None
    if needs_coords:  # the arrays of every store by name (the core checks shared coordinates)
        group = {}
        for store in reversed(paths):
            group.update(open_group(store, decode_cf=True).items())
    sample_times: list[int] = []
    time_start, time_stop = time_range if time_range is not None else (0, -1)
    in_offsets = [int(o) for o in input_offsets]
    tg_offsets = [int(o) for o in target_offsets]
    stride = 1
    time_map: list[int] = []
    if dated or stepped:
        axis = TimeAxis(group, path)
        if gaps == "nearest":
            time_map = axis.fill_gaps()
        unit = as_timedelta(frequency, "frequency") if frequency is not None else axis.step
        if unit <= np.timedelta64(0) or unit % axis.step != np.timedelta64(0):
            raise _chute.InvalidArgumentError(
                f"frequency {frequency!r} is not a positive multiple of the store's time step"
            )
        if input_steps is not None:
            in_offsets = axis.offsets(input_steps, unit, "input step")
        if target_steps is not None:
            tg_offsets = axis.offsets(target_steps, unit, "target step")
        if dated:
            if time_range is not None:
                raise _chute.InvalidArgumentError(
                    "give start/end/frequency or time_range, not both"
                )
            sample_times = axis.sample_times(
                start, end, unit, in_offsets + tg_offsets, "error" if time_map else gaps
            )
    time_seconds: list[int] = []
    lat_values: list[float] = []
    lon_values: list[float] = []
    if computed_forcings:
        from ._weather import LAT_NAMES, LON_NAMES, find_coordinate

        time_seconds = (axis.values.astype("datetime64[s]").astype(np.int64)).tolist()
        names = (find_coordinate(group, LAT_NAMES), find_coordinate(group, LON_NAMES))
        if None in names:
            raise _chute.InvalidArgumentError(
                f"computed forcings need 1-D latitude and longitude coordinates in {path!r}"
            )
        lat_values = np.asarray(group[names[0]][:], dtype=np.float64).tolist()
        lon_values = np.asarray(group[names[1]][:], dtype=np.float64).tolist()
    if isinstance(nan, str):
        if nan not in ("keep", "error"):
            raise _chute.InvalidArgumentError(
                f"nan must be 'keep', 'error' or a number, got {nan!r}"
            )
        nan_mode, nan_value = nan, 0.0
    else:
        nan_mode, nan_value = "fill", float(nan)
    lat, lon = (0, -1), (0, -1)
    if area is not None or grid_shard is not None:
        lat, lon = area_ranges(group, area, path)
        if grid_shard is not None:
            first = group[str(inputs[0])]
            names = first.dims
            height = (
                next(first.shape[d] for d, n in enumerate(names) if n in ("lat", "latitude"))
                if any(n in ("lat", "latitude") for n in names)
                else first.shape[-2]
            )
            lat = shard_rows(lat, height, grid_shard)
    return Dataset(
        _chute._open_windows(
            paths,
            [str(v) for v in inputs],
            [str(v) for v in (target_variables or [])],
            [str(v) for v in forcings],
            [str(v) for v in statics],
            [int(i) for i in (level_indices or [])],
            [float(v) for v in (levels or [])],
            in_offsets,
            tg_offsets,
            bool(channels_last),
            bool(decode_cf),
            str(dtype),
            [float(v) for v in (mean or [])],
            [float(v) for v in (std or [])],
            mean_suffix,
            std_suffix,
            level_coordinate,
            int(time_start),
            int(time_stop),
            int(stride),
            sample_times,
            [int(lat[0]), int(lat[1]), int(lon[0]), int(lon[1])],
            "" if statistics is None else str(statistics),
            [str(f) for f in computed_forcings],
            time_seconds,
            lat_values,
            lon_values,
            nan_mode,
            nan_value,
            bool(nan_mask),
            time_map,
        )
    )


class Batch(Mapping):
    """One batch: a mapping of output name -> numpy.ndarray (zero-copy), plus its sample numbers.

    The arrays keep their buffer alive; it returns to the loader's pool when the last array (or a
    tensor made from it with `torch.from_dlpack` / `jax.numpy.from_dlpack`) is released.
    """

    __slots__ = ("_arrays", "epoch", "index", "indices", "padding")

    def __init__(self, epoch: int, index: int, indices: np.ndarray, padding: int, arrays: dict):
        self.epoch = epoch
        self.index = index
        self.indices = indices
        self.padding = padding
        self._arrays = arrays

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._arrays[name]
        except KeyError:
            raise KeyError(f"batch has no array {name!r}; it has {list(self._arrays)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v.dtype}{list(v.shape)}" for k, v in self._arrays.items())
        return f"Batch(epoch={self.epoch}, index={self.index}, {shapes})"


def _as_numpy(array: np.ndarray, dtype_name: str) -> np.ndarray:
    if dtype_name == "bfloat16":
        import ml_dtypes

        return array.view(ml_dtypes.bfloat16)
    return array


def _default_rank_world() -> tuple[int, int]:
    from .distributed import rank_and_world_size

    return rank_and_world_size()


class Loader:
    """Training batches from `data`: a mapping of name -> array path (W1), or a `Dataset`.

    `threads=None` uses one reader thread per core; `prefetch` batches are assembled ahead of
    the consumer. `rank`/`world_size` default to MPI (mpi4py, when initialised), then torchrun's
    RANK/WORLD_SIZE, Slurm's SLURM_PROCID/SLURM_NTASKS, OpenMPI's OMPI_COMM_WORLD_RANK/SIZE, else
    0 and 1. Each `for` over the loader runs the next epoch; the samples of every batch are a pure
    function of (seed, epoch, rank, world_size, batch number). With drop_last=False the last batch
    is padded by wrapping around to the start of the epoch (`batch.padding` says how many).
    """

    def __init__(
        self,
        data: Mapping[str, str] | Dataset,
        batch_size: int = 16,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        threads: int | None = None,
        prefetch: int = 2,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> None:
        dataset = data if isinstance(data, Dataset) else packed(data)
        if rank is None or world_size is None:
            env_rank, env_world = _default_rank_world()
            rank = env_rank if rank is None else rank
            world_size = env_world if world_size is None else world_size
        if threads is not None and threads < 1:
            raise _chute.InvalidArgumentError(f"threads must be >= 1 or None, got {threads}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self._core = _chute._Loader(
            dataset._core,
            self.batch_size,
            bool(shuffle),
            int(seed),
            bool(drop_last),
            0 if threads is None else int(threads),
            int(prefetch),
            self.rank,
            self.world_size,
        )

    def __len__(self) -> int:
        return self._core.batches_per_epoch

    @property
    def threads(self) -> int:
        return self._core.threads

    def __iter__(self) -> Iterator[Batch]:
        self._core.begin_epoch()
        return self._batches()

    def epoch(self, epoch: int, start_batch: int = 0) -> Iterator[Batch]:
        """Iterates epoch `epoch` from batch `start_batch`."""
        self._core.begin_epoch(int(epoch), int(start_batch))
        return self._batches()

    def _batches(self) -> Iterator[Batch]:
        core = self._core
        while True:
            item = core.next()
            if item is None:
                return
            epoch, index, indices, padding, arrays = item
            yield Batch(
                epoch,
                index,
                indices,
                padding,
                {name: _as_numpy(array, dtype) for name, array, dtype in arrays},
            )

    def state_dict(self) -> dict[str, int]:
        """The position to resume from: {"seed", "epoch", "next_batch"}."""
        seed, epoch, next_batch = self._core.state()
        return {"seed": seed, "epoch": epoch, "next_batch": next_batch}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Makes the next `for` resume exactly at `state` (from state_dict())."""
        self._core.restore(int(state["seed"]), int(state["epoch"]), int(state["next_batch"]))

    def stats(self) -> dict[str, Any]:
        """Counters since the last reset_stats(): wait/read/decode/assemble seconds, bytes, queue
        occupancy samples (time_s, batches queued), time to first batch, buffers allocated."""
        return self._core.stats()

    def reset_stats(self) -> None:
        self._core.reset_stats()

    def close(self) -> None:
        """Stops the running epoch and joins the loader's threads (also done on deletion)."""
        self._core.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
