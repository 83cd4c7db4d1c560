"""The Loader: deterministic, sharded, prefetched training batches.

    >>> loader = chute.Loader({"inputs": "train/inputs.zarr", "targets": "train/targets.zarr"},
    ...                       batch_size=16, shuffle=True, seed=0, drop_last=True,
    ...                       threads=None, prefetch=2, rank=0, world_size=1)
    >>> len(loader)                  # batches per epoch for this rank
    >>> for batch in loader:         # one epoch; the next `for` is the next epoch
    ...     batch["inputs"]          # numpy.ndarray, zero-copy, (16, lat, lon, channels)
    ...     batch.indices            # numpy int64 array: the sample numbers, in batch order

Random crops of volumes, rotated by the cube's symmetries while they are placed:

    >>> ds = chute.crops({"inputs": "train.h5/Nbody", "targets": "train.h5/Hydro"}, size=64,
    ...                  channel_axis=0, crops_per_epoch=4096, transforms="rotations")
    >>> loader = chute.Loader(ds, batch_size=64, shuffle=True, seed=0)
    >>> batch.crops, batch.transforms   # (64, 3) start corners, (64,) transform ids

Weather windows over a Zarr group in xarray layout:

    >>> ds = chute.windows("era5.zarr", variables=["temperature", "2m_temperature"],
    ...                    levels=[500, 850], input_offsets=(-1, 0), target_offsets=(1,))
    >>> loader = chute.Loader(ds, batch_size=16)   # batch["inputs"], batch["targets"]

anemoi datasets (anemoi-datasets, ufs2arco), cut as anemoi-training cuts them (docs/anemoi.md):

    >>> ds = chute.anemoi("era5-o96.zarr", select=["2t", "msl"], multistep_input=2, rollout=1)
    >>> loader = chute.Loader(ds, batch_size=2)  # inputs (2, 2, ensemble, cells, variables)
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _chute
from ._array import _cache_args
from ._options import INT64_MAX, UINT64_MAX, flag, integer, invalid

if TYPE_CHECKING:  # annotations only (never evaluated at run time): no runtime dependency
    from typing_extensions import Self

__all__ = [
    "Batch",
    "Dataset",
    "Loader",
    "apply_cube_symmetry",
    "crops",
    "cube_symmetries",
    "packed",
    "windows",
]

# Core loaders inherited by a fork() child, kept alive there (see Loader._rebuild_after_fork).
_inherited_after_fork: list[Any] = []


class Dataset:
    """What a sample is: built by `packed()`, `windows()`, `crops()` or `chute.anemoi()`."""

    def __init__(self, core: Any, sample_chunk: int | None = None) -> None:
        self._core = core
        # Samples per stored chunk along the sample axis (packed datasets), for shuffle="chunks".
        self._sample_chunk = sample_chunk

    def __len__(self) -> int:
        return self._core.num_samples

    @property
    def outputs(self) -> list[tuple[str, str, tuple[int, ...]]]:
        """(name, dtype name, per-sample shape) of each output, in batch order."""
        return [(name, dtype, tuple(shape)) for name, dtype, shape in self._core.outputs()]

    def channel_names(self, output: str = "inputs") -> list[str]:
        """Windows only: the channel names of `output` in channel order."""
        if not hasattr(self._core, "channel_names"):
            raise TypeError("channel_names() exists for windows() datasets only")
        return self._core.channel_names(0 if output == "inputs" else 1)

    def time_indices(self) -> np.ndarray:
        """Windows only: the time index (position on the store's time axis) of every sample."""
        if not hasattr(self._core, "sample_time"):
            raise TypeError("time_indices() exists for windows() datasets only")
        return np.array([self._core.sample_time(i) for i in range(len(self))], dtype=np.int64)

    def __repr__(self) -> str:
        return f"chute.Dataset({self._core.describe()})"


def packed(
    arrays: Mapping[str, str],
    *,
    follow_symlinks: bool | None = None,
    cache: str | os.PathLike | None = None,
    cache_size: int | None = None,
) -> Dataset:
    """Packed samples: named arrays (local paths or URLs: an array folder or "group/member") sharing axis 0.

    follow_symlinks as in `chute.open` (None: the process-wide setting). `cache`,
    `cache_size`: a node-local cache folder for the stored chunks (see `chute.open`).
    """
    from ._array import _native_path, symlink_policy

    if not isinstance(arrays, Mapping) or not arrays:
        raise _chute.InvalidArgumentError("packed() needs a non-empty mapping of name -> path")
    paths = [(str(k), _native_path(v)) for k, v in arrays.items()]
    cache_args = _cache_args(cache, cache_size)
    with symlink_policy(follow_symlinks):
        core, sample_chunk = _chute._open_packed(paths, *cache_args)
    return Dataset(core, sample_chunk)


def _with_symlink_policy(function: Any) -> Any:
    """Adds the keyword `follow_symlinks` (as in `chute.open`; None: the process-wide setting):
    every store the call opens on this thread follows symbolic links or not."""

    @functools.wraps(function)
    def wrapper(*args: Any, follow_symlinks: bool | None = None, **kwargs: Any) -> Any:
        from ._array import symlink_policy

        with symlink_policy(follow_symlinks):
            return function(*args, **kwargs)

    return wrapper


@_with_symlink_policy
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
    masked_points: str = "error",
    std_floor: float = 0.0,
    level_coordinate: str = "level",
    time_range: tuple[int, int] | None = None,
    concat_dim: str = "time",
    allow_gaps: bool = False,
    file_pattern: str | None = None,
    file_step: Any = None,
    channels: Sequence[str] | None = None,
    channel_array: str = "fields",
    cache: str | os.PathLike | None = None,
    cache_size: int | None = None,
) -> Dataset:
    """Weather windows over the time axis of a Zarr group as xarray writes it (ERA5, WeatherBench2).

    `path` may be a list of stores or a glob pattern ("era5/*.nc"). Stores holding the same
    variables are files of one time series, joined along `concat_dim` as
    `chute.open_group(paths)` joins them (docs/many-files.md: ordered by time, checked, read
    across file boundaries as one store; `allow_gaps`, `file_pattern`/`file_step` for files
    without a time coordinate, `channels` naming the channels of a stacked `channel_array`).
    With `allow_gaps`, windows never cross a gap (with dates, use gaps="skip").
    Stores of different variables sharing the time/lat/lon coordinates (e.g. pressure levels
    and single levels) are joined by name; a coordinate that differs is an error naming both
    stores and the coordinate.

    `cache`, `cache_size`: a node-local cache folder for the stored chunks (see `chute.open`).

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
    `chute stats` / `chute.statistics()`). Statistics arrays of shape (level, lat, lon), or
    (lat, lon) for a variable without levels (`chute stats --per-gridpoint`; the whole stored
    grid), normalise per grid point instead, in the same pass: the chosen levels and the
    area/grid_shard window are taken from them. `std_floor` raises every finite std below it
    to it (per channel and per point; e.g. a point that never changed has std 0). A point read
    whose mean or std is not finite, or whose std is not > 0 after the floor, is masked (e.g.
    sea-surface temperature over land): `masked_points="error"` raises naming it,
    `masked_points="nan"` makes every value there NaN (whatever was stored; then `nan="keep"`
    or a fill value, as `nan="error"` checks the values before normalising). Arithmetic (per channel or per
    point): the decoded float32 value minus float32(mean), times float32(1 / std), then the
    cast. `dtype` is float32, float16 or bfloat16. Windows that would cross the ends are never
    sampled.
    """
    from . import _options as check
    from ._array import open_group
    from ._weather import TimeAxis, area_ranges, as_timedelta, shard_rows

    # Every option checked before anything is opened (issue 15).
    if isinstance(path, (str, os.PathLike)):
        paths = [check.path("path", path)]
    else:
        items = check._items("path", path, "store paths")
        paths = [check.path(f"path[{i}]", p) for i, p in enumerate(items)]
    if not paths:
        raise _chute.InvalidArgumentError("windows() needs a store path (or a list of them)")
    from . import _references

    for p in paths:
        _references.prepare(p)
    inputs_name = "input_variables" if input_variables is not None else "variables"
    inputs = input_variables if input_variables is not None else variables
    if not inputs:
        raise _chute.InvalidArgumentError("windows() needs variables (or input_variables)")
    inputs = check.texts(inputs_name, inputs)
    if target_variables is not None:
        target_variables = check.non_empty(
            "target_variables", check.texts("target_variables", target_variables)
        )
    forcings = check.texts("forcings", forcings)
    computed_forcings = check.texts("computed_forcings", computed_forcings)
    statics = check.texts("statics", statics)
    if levels is not None:
        levels = check.non_empty("levels", check.numbers("levels", levels))
    if level_indices is not None:
        level_indices = check.non_empty(
            "level_indices", check.integers("level_indices", level_indices, 0)
        )
    for name, steps in (("input_steps", input_steps), ("target_steps", target_steps)):
        if steps is not None:
            check._items(name, steps, "time steps ('6h' or integers)")
    input_offsets = check.non_empty(
        "input_offsets", check.integers("input_offsets", input_offsets, -(2**31), 2**31)
    )
    target_offsets = check.integers("target_offsets", target_offsets, -(2**31), 2**31)
    gaps = check.choice("gaps", gaps, ("error", "skip", "nearest"))
    if area is not None:
        area = check.numbers("area", area, -360.0, 360.0)
        if len(area) != 4:
            raise check.invalid(f"area must be (north, west, south, east), got {area!r}")
    if grid_shard is not None:
        shard = check.integers("grid_shard", grid_shard, 0)
        if len(shard) != 2 or shard[1] < 1 or shard[0] >= shard[1]:
            raise check.invalid(f"grid_shard must be (i, n) with 0 <= i < n, got {grid_shard!r}")
        grid_shard = (shard[0], shard[1])
    channels_last = check.flag("channels_last", channels_last)
    decode_cf = check.flag("decode_cf", decode_cf)
    nan_mask = check.flag("nan_mask", nan_mask)
    dtype = check.choice("dtype", dtype, ("float32", "float16", "bfloat16"))
    if not isinstance(nan, str):
        nan = check.number("nan", nan)
    if mean is not None:
        mean = check.numbers("mean", mean)
    if std is not None:
        std = check.numbers("std", std, 1e-300)
    mean_suffix = check.text("mean_suffix", mean_suffix)
    std_suffix = check.text("std_suffix", std_suffix)
    level_coordinate = check.text("level_coordinate", level_coordinate)
    if statistics is not None:
        statistics = check.path("statistics", statistics)
    masked_points = check.choice("masked_points", masked_points, ("error", "nan"))
    std_floor = check.number("std_floor", std_floor, 0.0)
    if time_range is not None:
        bounds = check.integers("time_range", time_range, 0)
        if len(bounds) != 2 or bounds[0] >= bounds[1]:
            raise check.invalid(f"time_range must be (i, j) with 0 <= i < j, got {time_range!r}")
        time_range = (bounds[0], bounds[1])
    path = paths[0]
    from ._array import Group, _is_many, open_many

    joined = None
    if len(paths) > 1 or _is_many(path) or file_pattern is not None or channels is not None:
        joined = open_many(
            paths, concat_dim=concat_dim, allow_gaps=allow_gaps, file_pattern=file_pattern,
            file_step=file_step, channels=channels, channel_array=channel_array,
            or_by_name=file_pattern is None and channels is None,
            cache_args=_cache_args(cache, cache_size),
        )  # fmt: skip
    dated = start is not None or end is not None or frequency is not None
    stepped = input_steps is not None or target_steps is not None or bool(computed_forcings)
    needs_coords = dated or stepped or area is not None or grid_shard is not None
    group = None
    if needs_coords:  # the arrays of every store by name (the core checks shared coordinates)
        if joined is not None:
            group = Group(joined, decode_cf=True)
        else:
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
            masked_points,
            float(std_floor),
            *_cache_args(cache, cache_size),
            None if joined is None else joined["arrays"],
            [] if joined is None else list(joined["segments"]),
        )
    )


@_with_symlink_policy
def crops(
    arrays: Mapping[str, Any],
    size: int | Sequence[int] = 64,
    *,
    channel_axis: int | None = 0,
    crops_per_epoch: int = 4096,
    transforms: str | None = None,
    channels_last: bool = False,
    cache: str | os.PathLike | None = None,
    cache_size: int | None = None,
) -> Dataset:
    """Volume crops: random boxes of `size` at the same position in every array of `arrays`.

    `arrays` maps output names to anything `chute.open` accepts (a path, or a `chute.Array`);
    their spatial axes (every axis but `channel_axis`; None: no channel axis) must match. An
    epoch is `crops_per_epoch` crops; crop i of epoch e starts at a corner drawn uniformly from
    (seed, e, i) alone, so batches do not depend on threads, and ranks shard crops like samples.
    `transforms`: None, "rotations" (the cube's 24 right-angle rotations) or "symmetries" (all
    48, with reflections): each crop gets one id, applied to every array of the sample while it
    is placed (`cube_symmetries()` gives the NumPy composition of each id). Outputs: one per
    array, (C, *size) or with `channels_last` (*size, C), whatever the stored layout; plus
    "crops" (ndim start corners, int64) and "transforms" (ids, int64), also `batch.crops` and
    `batch.transforms`.
    """
    from . import _options as check
    from ._array import Array, open

    if not isinstance(arrays, Mapping) or not arrays:
        raise _chute.InvalidArgumentError("crops() needs a non-empty mapping of name -> array")
    if hasattr(size, "__index__") or isinstance(size, (bool, float, np.floating)):
        sizes = [check.integer("size", size, 1, 2**31)]
    else:
        sizes = check.non_empty("size", check.integers("size", size, 1, 2**31))
    if channel_axis is not None:
        channel_axis = check.integer("channel_axis", channel_axis, -32, 31, " or None")
    crops_per_epoch = check.integer("crops_per_epoch", crops_per_epoch, 1, INT64_MAX)
    transforms = check.choice("transforms", transforms, (None, "none", "rotations", "symmetries"))
    channels_last = check.flag("channels_last", channels_last)
    opened = []
    for name, array in arrays.items():
        if not isinstance(array, Array):
            array = open(array, cache=cache, cache_size=cache_size)
        opened.append((str(name), array._core))
    return Dataset(
        _chute._open_crops(
            opened,
            sizes,
            None if channel_axis is None else int(channel_axis),
            int(crops_per_epoch),
            "none" if transforms is None else str(transforms),
            bool(channels_last),
        )
    )


def cube_symmetries() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(axes, flips) of each transform id 0..47: y = np.flip(np.transpose(x, axes), flips).

    Ids 0..23 are the rotations, 24..47 the symmetries with a reflection.
    """
    return [(tuple(axes), tuple(flips)) for axes, flips in _chute._cube_symmetries()]


def apply_cube_symmetry(x: np.ndarray, transform: int, spatial_axes=(-3, -2, -1)) -> np.ndarray:
    """Transform id `transform` applied to the `spatial_axes` of `x` with NumPy (a reference)."""
    axes, flips = cube_symmetries()[int(transform)]
    spatial = [a % x.ndim for a in spatial_axes]
    order = list(range(x.ndim))
    for k, axis in enumerate(spatial):
        order[axis] = spatial[axes[k]]
    return np.flip(np.transpose(x, order), axis=tuple(spatial[k] for k in flips))


class Batch(Mapping):
    """One batch: a mapping of output name -> numpy.ndarray (zero-copy), plus its sample numbers.

    The arrays keep their buffer alive; it returns to the loader's pool when the last array (or a
    tensor made from it with `torch.from_dlpack` / `jax.numpy.from_dlpack`) is released.
    """

    __slots__ = ("_arrays", "_exports", "epoch", "index", "indices", "padding")

    def __init__(
        self,
        epoch: int,
        index: int,
        indices: np.ndarray,
        padding: int,
        arrays: dict,
        exports: dict | None = None,
    ):
        self.epoch = epoch
        self.index = index
        self.indices = indices
        self.padding = padding
        self._arrays = arrays
        self._exports = exports or {}

    def dlpack(self, name: str) -> Any:
        """The batch buffer of `name` as a DLPack exporter typed as the loader made it (bfloat16
        included, which NumPy cannot hold), for `torch.from_dlpack` / `jax.numpy.from_dlpack`.
        Zero-copy; it keeps the buffer alive like the NumPy array does."""
        if name in self._exports:
            return self._exports[name]
        return self[name]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._arrays[name]
        except KeyError:
            raise KeyError(f"batch has no array {name!r}; it has {list(self._arrays)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    @property
    def crops(self) -> np.ndarray:
        """crops() datasets: the (batch, ndim) start corners of the crops."""
        return self["crops"]

    @property
    def transforms(self) -> np.ndarray:
        """crops() datasets: the (batch,) transform ids (see cube_symmetries())."""
        return self["transforms"]

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v.dtype}{list(v.shape)}" for k, v in self._arrays.items())
        return f"Batch(epoch={self.epoch}, index={self.index}, {shapes})"


def _as_numpy(array: np.ndarray, dtype_name: str) -> np.ndarray:
    if dtype_name == "bfloat16":
        import ml_dtypes

        return array.view(ml_dtypes.bfloat16)
    return array


_UINT64_MAX = UINT64_MAX
_INT64_MAX = INT64_MAX
_logged_rank_sources: set[tuple[int, int, str]] = set()
_invalid = invalid
_integer = integer
_flag = flag


def _quiet_from_env() -> bool:
    return os.environ.get("CHUTE_QUIET", "").strip() not in ("", "0")


def _log_rank_once(rank: int, world_size: int, source: str) -> None:
    """One line on stderr per process and source: where rank and world size came from."""
    key = (rank, world_size, source)
    if key in _logged_rank_sources:
        return
    _logged_rank_sources.add(key)
    print(
        f"chute: rank {rank} of {world_size} from {source}; pass rank=/world_size= to choose, "
        "verbose=False or CHUTE_QUIET=1 to silence this line",
        file=sys.stderr,
        flush=True,
    )


def _checked_options(
    data: Any,
    *,
    batch_size: Any = 16,
    shuffle: Any = True,
    seed: Any = 0,
    drop_last: Any = False,
    threads: Any = None,
    prefetch: Any = 2,
    rank: Any = None,
    world_size: Any = None,
    pad_to_batch: Any = False,
    timeout: Any = None,
    verbose: Any = None,
    follow_symlinks: Any = None,
    cache: Any = None,
    cache_size: Any = None,
    shuffle_block: Any = None,
    shuffle_window: Any = 4,
    io_concurrency: Any = None,
    read_ahead: Any = True,
    pin_memory: Any = False,
    device: Any = None,
) -> dict[str, Any]:
    """Every Loader option value checked on its own and normalised, nothing opened: an
    InvalidArgumentError names the option, the value and the range (issue 15). What needs the
    data opened (batch_size against the samples) is checked when the loader is made. Shared by
    Loader and the torch adapter, which must check before it knows torch.distributed's rank."""
    batch_size = _integer("batch_size", batch_size, 1, _INT64_MAX)
    chunk_shuffle = isinstance(shuffle, str) and shuffle == "chunks"
    if isinstance(shuffle, str) and not chunk_shuffle:
        raise _invalid(f'shuffle must be True, False or "chunks", got {shuffle!r}')
    shuffle = True if chunk_shuffle else _flag("shuffle", shuffle)
    shuffle_window = _integer("shuffle_window", shuffle_window, 1, _INT64_MAX)
    if shuffle_block is not None:
        shuffle_block = _integer("shuffle_block", shuffle_block, 1, _INT64_MAX)
    seed = _integer("seed", seed, 0, _UINT64_MAX, " (an unsigned 64-bit integer)")
    drop_last = _flag("drop_last", drop_last)
    if threads is not None:
        threads = _integer(
            "threads",
            threads,
            1,
            _chute._max_reader_threads(),
            " or None (16 per hardware thread at most: more than this machine can run)",
        )
    prefetch = _integer("prefetch", prefetch, 1, 4096)
    if io_concurrency is not None:
        io_concurrency = _integer("io_concurrency", io_concurrency, 1, 65536, " or None")
    pad_to_batch = _flag("pad_to_batch", pad_to_batch)
    read_ahead = _flag("read_ahead", read_ahead)
    pin_memory = _flag("pin_memory", pin_memory)
    device = _device_name(device)
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.number)):
            raise _invalid(f"timeout must be a number of seconds or None, got {timeout!r}")
        timeout = float(timeout)
        if not 0 < timeout <= 1e9:
            raise _invalid(f"timeout must be > 0 seconds (or None: no limit), got {timeout}")
    if verbose is not None:
        verbose = _flag("verbose", verbose)
    if rank is not None:
        rank = _integer("rank", rank, 0, _INT64_MAX)
    if world_size is not None:
        world_size = _integer("world_size", world_size, 1, _INT64_MAX)
    if rank is not None and world_size is not None and rank >= world_size:
        raise _invalid(f"rank must be in [0, world_size={world_size}), got {rank}")
    if isinstance(data, Dataset):
        if follow_symlinks is not None or cache is not None or cache_size is not None:
            raise _invalid(
                "follow_symlinks and cache apply when data is a mapping of paths; a Dataset "
                "was opened already: pass them to chute.packed/windows/crops"
            )
    elif isinstance(data, Mapping):
        if follow_symlinks is not None:
            _flag("follow_symlinks", follow_symlinks)
        _cache_args(cache, cache_size)
    else:
        raise _invalid(
            "data must be a mapping of name -> array path or a chute.Dataset, got "
            f"{type(data).__name__}"
        )
    return {
        "batch_size": batch_size,
        "shuffle": shuffle,
        "chunk_shuffle": chunk_shuffle,
        "seed": seed,
        "drop_last": drop_last,
        "threads": threads,
        "prefetch": prefetch,
        "rank": rank,
        "world_size": world_size,
        "pad_to_batch": pad_to_batch,
        "timeout": timeout,
        "verbose": verbose,
        "shuffle_block": shuffle_block,
        "shuffle_window": shuffle_window,
        "io_concurrency": io_concurrency,
        "read_ahead": read_ahead,
        "pin_memory": pin_memory,
        "device": device,
    }


def _device_name(device: Any) -> str:
    """The device option as chute names it: None -> "" (host batches); "cuda", "cuda:N"; a
    torch.device of type cuda; a jax.Device on a GPU. Other strings are checked by the loader."""
    if device is None:
        return ""
    if isinstance(device, str):
        return device
    kind = getattr(device, "type", None)  # torch.device
    if isinstance(kind, str) and hasattr(device, "index"):
        return kind if device.index is None else f"{kind}:{device.index}"
    platform = getattr(device, "platform", None)  # jax.Device
    if platform == "gpu" and hasattr(device, "local_hardware_id"):
        return f"cuda:{device.local_hardware_id}"
    raise _invalid(
        f'device must be None, "cuda", "cuda:N", a torch.device or a jax GPU device, got {device!r}'
    )


class Loader:
    """Training batches from `data`: a mapping of name -> array path (packed samples), or a `Dataset`.

    `threads=None` uses one reader thread per CPU this process may run on (its affinity);
    `prefetch` batches are assembled ahead of the consumer; `io_concurrency` chunk reads are kept
    in flight while the threads decode (None: the store's preference, 32 for local files; 1: each
    thread reads its own chunks). `read_ahead=True` plans the next batch and submits its chunk reads
    before the current one decodes (they share `io_concurrency`; one more batch buffer and one
    batch's stored bytes). `rank`/`world_size` default to the first of: MPI (mpi4py, when
    initialised), torchrun's RANK/WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_RANK/SIZE, PMI's
    PMI_RANK/PMI_SIZE, Slurm's SLURM_PROCID/SLURM_NTASKS (chute.distributed.rank_info), else
    0 and 1; when a launcher set them the loader says so once on stderr (`verbose=False` or
    CHUTE_QUIET=1 silences it), and `loader.rank_source` names the variables. Each `for` over
    the loader runs the next epoch; the samples of every batch are a pure function of (seed,
    epoch, rank, world_size, batch number). With drop_last=False the last batch is padded by
    wrapping around to the start of the epoch (`batch.padding` says how many).

    Every option is checked up front (InvalidArgumentError naming option, value and range):
    `batch_size` × `world_size` larger than the dataset is an error unless `pad_to_batch=True`;
    `threads` at most 16 per hardware thread (64 at least). `timeout` (seconds, None: wait
    forever) makes a batch that does not come in time raise chute.ReadTimeoutError (a
    TimeoutError) and cancel the epoch. Ctrl-C while waiting raises KeyboardInterrupt at once
    and joins the loader's threads. After os.fork() (DataLoader workers, multiprocessing), the
    child's first use of an inherited Loader rebuilds it with fresh threads at the same position.

    `pin_memory=True` makes the batch buffers page-locked host memory (CUDA), so
    `tensor.cuda(non_blocking=True)` is one DMA from them; it needs a CUDA driver and GPU and is
    an error without one. `device="cuda:0"` copies each batch to that GPU on chute's own stream as
    soon as it is assembled, from page-locked buffers whatever `pin_memory` says (`prefetch`
    then counts device batches): the batch's arrays are
    DLPack exporters of device memory (`torch.from_dlpack`, `jax.numpy.from_dlpack`), whose
    consumer's stream is ordered after chute's copy. See docs/gpu.md.
    """

    def __init__(
        self,
        data: Mapping[str, str] | Dataset,
        batch_size: int = 16,
        shuffle: bool | str = True,
        seed: int = 0,
        drop_last: bool = False,
        threads: int | None = None,
        prefetch: int = 2,
        rank: int | None = None,
        world_size: int | None = None,
        *,
        pad_to_batch: bool = False,
        timeout: float | None = None,
        verbose: bool | None = None,
        follow_symlinks: bool | None = None,
        cache: str | os.PathLike | None = None,
        cache_size: int | None = None,
        shuffle_block: int | None = None,
        shuffle_window: int = 4,
        io_concurrency: int | None = None,
        read_ahead: bool = True,
        pin_memory: bool = False,
        device: Any = None,
    ) -> None:
        o = _checked_options(
            data,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
            threads=threads,
            prefetch=prefetch,
            rank=rank,
            world_size=world_size,
            pad_to_batch=pad_to_batch,
            timeout=timeout,
            verbose=verbose,
            follow_symlinks=follow_symlinks,
            cache=cache,
            cache_size=cache_size,
            shuffle_block=shuffle_block,
            shuffle_window=shuffle_window,
            io_concurrency=io_concurrency,
            read_ahead=read_ahead,
            pin_memory=pin_memory,
            device=device,
        )
        batch_size, shuffle, chunk_shuffle = o["batch_size"], o["shuffle"], o["chunk_shuffle"]
        seed, drop_last, threads, prefetch = o["seed"], o["drop_last"], o["threads"], o["prefetch"]
        rank, world_size, timeout, verbose = o["rank"], o["world_size"], o["timeout"], o["verbose"]
        shuffle_block, shuffle_window = o["shuffle_block"], o["shuffle_window"]
        pad_to_batch, io_concurrency = o["pad_to_batch"], o["io_concurrency"]
        # data is a Dataset or a mapping of paths (checked above)
        dataset = (
            data
            if isinstance(data, Dataset)
            else packed(data, follow_symlinks=follow_symlinks, cache=cache, cache_size=cache_size)
        )
        source = "arguments rank/world_size"
        if rank is None or world_size is None:
            from .distributed import rank_info

            info = rank_info()
            source = (
                info.source
                if rank is None and world_size is None
                else (f"argument {'rank' if rank is not None else 'world_size'} and {info.source}")
            )
            rank = info.rank if rank is None else rank
            world_size = info.world_size if world_size is None else world_size
            quiet = (not verbose) if verbose is not None else _quiet_from_env()
            if info.source != "default" and not quiet:
                _log_rank_once(rank, world_size, source)
        block = 0
        if chunk_shuffle:
            block = shuffle_block or dataset._sample_chunk or 0
            if block < 1:
                raise _invalid(
                    'shuffle="chunks" needs shuffle_block (samples per chunk along the sample '
                    "axis) for this dataset"
                )
        self.dataset = dataset
        self.batch_size = batch_size
        self.rank = rank
        self.world_size = world_size
        self.rank_source = source
        self.timeout = timeout
        self._args = (
            dataset._core,
            batch_size,
            shuffle,
            seed,
            drop_last,
            0 if threads is None else threads,
            prefetch,
            rank,
            world_size,
            pad_to_batch,
            0.0 if timeout is None else timeout,
            block,
            shuffle_window,
            0 if io_concurrency is None else io_concurrency,
            o["read_ahead"],
            o["pin_memory"],
            o["device"],
        )
        self.device = o["device"] or None
        self._pid = os.getpid()
        self._runs = 0  # epochs begun, so an abandoned loop stops only its own
        self._last_epoch: int | None = None  # the last epoch begun (for a fork child)
        self._restore_pending = False
        self._core_loader = _chute._Loader(*self._args)

    @property
    def _core(self) -> Any:
        if self._pid != os.getpid():
            self._rebuild_after_fork()
        return self._core_loader

    def _rebuild_after_fork(self) -> None:
        # The inherited core's threads do not exist in this child; it must not be destroyed
        # here either (that would join them), so it is kept alive with the process. The new core
        # goes on as the parent's would: a restored position if one is pending, else the next
        # `for` runs the epoch after the last one begun.
        inherited = self._core_loader
        _inherited_after_fork.append(inherited)
        self._core_loader = _chute._Loader(*self._args)
        self._pid = os.getpid()
        seed, epoch, next_batch, *_ = inherited.state()
        if self._restore_pending:
            self._core_loader.restore(seed, epoch, next_batch)
        elif self._last_epoch is not None:
            self._core_loader.restore(seed, self._last_epoch + 1, 0)

    def __len__(self) -> int:
        return self._core.batches_per_epoch

    @property
    def threads(self) -> int:
        return self._core.threads

    def __iter__(self) -> Iterator[Batch]:
        core = self._core
        core.begin_epoch()
        self._last_epoch = core.state()[1]  # the epoch begun
        self._restore_pending = False
        self._runs += 1
        return self._batches(self._runs)

    def epoch(self, epoch: int, start_batch: int = 0) -> Iterator[Batch]:
        """Iterates epoch `epoch` from batch `start_batch`."""
        epoch = _integer("epoch", epoch, 0, _INT64_MAX)
        start_batch = _integer("start_batch", start_batch, 0, len(self))
        self._core.begin_epoch(epoch, start_batch)
        self._last_epoch = epoch
        self._restore_pending = False
        self._runs += 1
        return self._batches(self._runs)

    def _batches(self, run: int) -> Iterator[Batch]:
        core = self._core
        try:
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
                    {
                        # a device batch's arrays are DLPack exporters only (array is None)
                        name: exported if array is None else _as_numpy(array, dtype)
                        for name, array, dtype, exported in arrays
                    },
                    {name: exported for name, _, _, exported in arrays},
                )
        except BaseException:
            # Ctrl-C, an error, or a loop left early (GeneratorExit): join this epoch's thread
            # now, unless another epoch has begun since.
            if run == self._runs:
                core.stop()
            raise

    def state_dict(self) -> dict[str, int]:
        """The position to resume from: {"seed", "epoch", "next_batch"}, plus "batch_size",
        "world_size" and "dataset" (a fingerprint) so that it is not restored into a loader over
        other data. Taken after an epoch's last batch, it points at the next epoch's first."""
        seed, epoch, next_batch, batch_size, world_size, dataset = self._core.state()
        return {
            "seed": seed,
            "epoch": epoch,
            "next_batch": next_batch,
            "batch_size": batch_size,
            "world_size": world_size,
            "dataset": dataset,
        }

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Makes the next `for` resume exactly at `state` (from state_dict()). A state from a
        loader with another batch size, world size or dataset raises InvalidArgumentError."""
        if not isinstance(state, Mapping):
            raise _invalid(f"state must be a mapping from state_dict(), got {type(state).__name__}")
        missing = [key for key in ("seed", "epoch", "next_batch") if key not in state]
        if missing:
            raise _invalid(f"state is missing {missing}; expected a dict from state_dict()")
        self._core.restore(
            _integer("state['seed']", state["seed"], 0, _UINT64_MAX),
            _integer("state['epoch']", state["epoch"], 0, _INT64_MAX),
            _integer("state['next_batch']", state["next_batch"], 0, _INT64_MAX),
            _integer("state['batch_size']", state.get("batch_size", 0), 0, _INT64_MAX),
            _integer("state['world_size']", state.get("world_size", 0), 0, _INT64_MAX),
            _integer("state['dataset']", state.get("dataset", 0), 0, _UINT64_MAX),
        )
        self._restore_pending = True

    def stats(self) -> dict[str, Any]:
        """Counters since the last reset_stats(): wait/read/decode/assemble seconds, bytes, queue
        occupancy samples (time_s, batches queued), time to first batch, buffers allocated."""
        return self._core.stats()

    def reset_stats(self) -> None:
        self._core.reset_stats()

    def close(self) -> None:
        """Stops the running epoch and joins the loader's threads (also done on deletion).
        May be called from another thread while one iterates: that loop then ends."""
        self._core.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
