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
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _chute, _pickling
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
        self._recipe: _pickling.Recipe | None = None  # the call that made it (see _pickling)

    def _remember(self, recipe: _pickling.Recipe) -> None:
        self._recipe = recipe

    def __reduce__(self) -> tuple:
        """Pickled as the call that made it (packed, windows, crops, anemoi), made again where
        it is unpickled."""
        return _pickling.reduce(self, self._recipe)

    def __copy__(self) -> Dataset:
        return _pickling.shallow_copy(self)

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


@_pickling.remembered
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

    wrapper.takes_follow_symlinks = True  # type: ignore[attr-defined]
    return wrapper


@_pickling.remembered
@_with_symlink_policy
def windows(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    variables: Sequence[str] | None = None,
    *,
    input_variables: Sequence[str] | None = None,
    # BEGIN GENERATED WindowOptions signature except variables
    target_variables: Sequence[str] | None = None,
    forcings: Sequence[str] = (),
    computed_forcings: Sequence[str] = (),
    statics: Sequence[str] = (),
    levels: Sequence[float] | None = None,
    level_indices: Sequence[int] | None = None,
    input_offsets: Sequence[int] = (-1, 0),
    target_offsets: Sequence[int] = (1,),
    channels_last: bool = True,
    dtype: Literal["float32", "float16", "bfloat16"] = "float32",
    decode_cf: bool = True,
    nan_mask: bool = False,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    mean_suffix: str = "",
    std_suffix: str = "",
    statistics: str | os.PathLike[str] | None = None,
    masked_points: Literal["error", "nan"] = "error",
    std_floor: float = 0.0,
    level_coordinate: str = "level",
    # END GENERATED
    input_steps: Sequence[Any] | None = None,
    target_steps: Sequence[Any] | None = None,
    start: Any = None,
    end: Any = None,
    frequency: Any = None,
    gaps: str = "error",
    area: Sequence[float] | None = None,
    grid_shard: tuple[int, int] | None = None,
    nan: str | float = "keep",
    time_range: tuple[int, int] | None = None,
    concat_dim: str = "time",
    allow_gaps: bool = False,
    file_pattern: str | None = None,
    file_step: Any = None,
    channels: Sequence[str] | None = None,
    channel_array: str = "fields",
    cache: str | os.PathLike[str] | None = None,
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

    Options of the core (keyword-only):

    .. BEGIN GENERATED WindowOptions doc except variables
    `target_variables` (default None): variables of "targets"; None: the input variables
    `forcings` (default ()): variables read at the target steps, appended to the inputs
    `computed_forcings` (default ()): cos_local_time, sin_local_time, cos_day_of_year,
        sin_day_of_year, toa_radiation: computed at the target steps, after the stored
        forcings (not normalised)
    `statics` (default ()): 2-D (lat, lon) fields appended to the inputs once
    `levels` (default None): values of the level coordinate to read; None: every level
    `level_indices` (default None): positions along the level axis to read; None: every
        level (>= 0)
    `input_offsets` (default (-1, 0)): input steps, in store steps from the sample's time
        (in [-2147483648, 2147483648])
    `target_offsets` (default (1,)): target steps, in store steps (in [-2147483648,
        2147483648])
    `channels_last` (default True): outputs (lat, lon, channels), else (channels, lat, lon)
    `dtype` (default "float32"): the outputs' dtype
    `decode_cf` (default True): CF decoding: fill values -> NaN, scale_factor/add_offset
    `nan_mask` (default False): append a channel per input channel: 1 where the value was
        missing ("<channel>/mask")
    `mean` (default None): normalisation: one mean per channel of one step of the inputs;
        None: no explicit values
    `std` (default None): normalisation: one standard deviation per channel (> 0); None: no
        explicit values (>= 1.4013e-45)
    `mean_suffix` (default ""): normalise with the arrays named variable + suffix
        ("mean/{}": a pattern)
    `std_suffix` (default ""): the same for the standard deviations
    `statistics` (default None): a group written by `chute stats`: normalise with its
        mean/<v> and std/<v>; None: no statistics group
    `masked_points` (default "error"): a read point whose statistics are not finite or std
        <= 0: an error, or NaN values
    `std_floor` (default 0.0): raise every finite std below it to it (>= 0)
    `level_coordinate` (default "level"): the coordinate array of levels when not named like
        the level dimension
    .. END GENERATED
    """
    from . import _options as check
    from ._array import open_group
    from ._weather import TimeAxis, area_ranges, as_timedelta, shard_rows

    # Every option checked before anything is opened: the core's as they are set.
    values = locals()
    picked = {name: values[name] for name in _WINDOW_FIELDS if name != "variables"}
    options = _chute.WindowOptions(**picked)
    options.variables = input_variables if input_variables is not None else variables
    inputs = list(options.variables)
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
    for name, steps in (("input_steps", input_steps), ("target_steps", target_steps)):
        if steps is not None:
            check._items(name, steps, "time steps ('6h' or integers)")
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
    if not isinstance(nan, str):
        nan = check.number("nan", nan)
    if time_range is not None:
        bounds = check.integers("time_range", time_range, 0)
        if len(bounds) != 2 or bounds[0] >= bounds[1]:
            raise check.invalid(f"time_range must be (i, j) with 0 <= i < j, got {time_range!r}")
        time_range = (bounds[0], bounds[1])
    computed_forcings = list(options.computed_forcings)
    in_offsets = list(options.input_offsets)
    tg_offsets = list(options.target_offsets)
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
    options.input_offsets, options.target_offsets = in_offsets, tg_offsets
    options.time_start, options.time_stop, options.sample_stride = time_start, time_stop, stride
    options.sample_times, options.time_map = sample_times, time_map
    options.time_seconds, options.lat_values, options.lon_values = (
        time_seconds,
        lat_values,
        lon_values,
    )
    options.nan, options.nan_value = nan_mode, nan_value
    options.lat_start, options.lat_stop = int(lat[0]), int(lat[1])
    options.lon_start, options.lon_stop = int(lon[0]), int(lon[1])
    return Dataset(
        _chute._open_windows(
            paths,
            options,
            *_cache_args(cache, cache_size),
            None if joined is None else joined["arrays"],
            [] if joined is None else list(joined["segments"]),
        )
    )


@_pickling.remembered
@_with_symlink_policy
def crops(
    arrays: Mapping[str, Any],
    *,
    # BEGIN GENERATED CropOptions signature
    size: int | Sequence[int] = (64,),
    channel_axis: int | None = 0,
    crops_per_epoch: int = 4096,
    transforms: Literal["none", "rotations", "symmetries"] | None = None,
    channels_last: bool = False,
    # END GENERATED
    cache: str | os.PathLike[str] | None = None,
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

    Options (keyword-only; `cache`, `cache_size` as in `chute.open`):

    .. BEGIN GENERATED CropOptions doc
    `size` (default (64,)): crop extent: one value for every spatial axis, or one per axis
        (in [1, 2147483648])
    `channel_axis` (default 0): the axis holding channels in every array (negative: from the
        end); None: every axis is spatial (in [-32, 31])
    `crops_per_epoch` (default 4096): crops in one epoch (>= 1)
    `transforms` (default None): "rotations" (the cube's 24 right-angle rotations),
        "symmetries" (all 48, with reflections) or "none", one id per crop applied while it
        is placed; None: "none"
    `channels_last` (default False): outputs (*size, C) instead of (C, *size), whatever the
        stored layout
    .. END GENERATED
    """
    from ._array import Array, open

    if not isinstance(arrays, Mapping) or not arrays:
        raise _chute.InvalidArgumentError("crops() needs a non-empty mapping of name -> array")
    values = locals()
    picked = {name: values[name] for name in _CROP_FIELDS}
    if hasattr(size, "__index__") and not isinstance(size, (bool, np.bool_)):
        picked["size"] = [size]
    options = _chute.CropOptions(**picked)
    opened = []
    for name, array in arrays.items():
        if not isinstance(array, Array):
            array = open(array, cache=cache, cache_size=cache_size)
        opened.append((str(name), array._core))
    return Dataset(_chute._open_crops(opened, options))


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


def _loader_options(data: Any, values: Mapping[str, Any]) -> tuple[Any, bool]:
    """The core's LoaderOptions from the keywords in `values` (each checked by the core as it is
    set, the error naming the option), and whether shuffle="chunks" was asked for. The options
    of this Python layer (data, verbose, follow_symlinks, cache) are checked here. Nothing is
    opened: shared by Loader and the torch adapter, which checks before it knows its rank."""
    shuffle = values["shuffle"]
    chunk_shuffle = isinstance(shuffle, str) and shuffle == "chunks"
    picked = {name: values[name] for name in _LOADER_FIELDS}
    picked["device"] = _device_name(picked["device"]) or None
    if chunk_shuffle:
        picked["shuffle"] = True
    if picked["seed"] is None:
        import secrets

        picked["seed"] = secrets.randbits(64)
    options = _chute.LoaderOptions(**picked)
    if values.get("verbose") is not None:
        _flag("verbose", values["verbose"])
    follow_symlinks, cache, cache_size = (
        values.get(k) for k in ("follow_symlinks", "cache", "cache_size")
    )
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
    if values["rank"] is not None and values["world_size"] is not None:
        options.validate()  # rank < world_size, threads against this machine
    else:  # the ranks are checked once the launcher's are known
        _chute.LoaderOptions(**{**picked, "rank": 0, "world_size": 1}).validate()
    return options, chunk_shuffle


def _public_fields(options: Any) -> list[str]:
    return [f["name"] for f in options._fields() if not f["internal"]]


_LOADER_FIELDS = _public_fields(_chute.LoaderOptions)
_CROP_FIELDS = _public_fields(_chute.CropOptions)
_WINDOW_FIELDS = _public_fields(_chute.WindowOptions)


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


def _unpickled_loader(dataset: Dataset, options: dict, state: dict) -> Loader:
    loader = Loader(dataset, **options)
    loader.load_state_dict(state)
    return loader


class Loader:
    """Training batches from `data`: a mapping of name -> array path (packed samples), or a `Dataset`.

    `threads=None` uses one reader thread per CPU this process may run on (its affinity);
    `prefetch` batches are assembled ahead of the consumer; `io_concurrency` chunk reads are kept
    in flight while the threads decode (None: the store's preference, 32 for local files; 1: each
    thread reads its own chunks). `read_ahead=True` plans the next batch and submits its chunk reads
    before the current one decodes (they share `io_concurrency`; one more batch buffer and one
    batch's stored bytes). `rank`/`world_size` default to the first of (chute.distributed's
    order): MPI (mpi4py, when initialised), torchrun's RANK/WORLD_SIZE, Open MPI's
    OMPI_COMM_WORLD_RANK/SIZE, PMI's PMI_RANK/PMI_SIZE, Slurm's SLURM_PROCID/SLURM_NTASKS, else 0
    and 1;
    when a launcher set them the loader says so once on stderr (`verbose=False` or
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
    Pickled (spawn or forkserver workers), it is made again over its dataset reopened, with the
    same options, seed and ranks, resuming where its next `for` would start.

    Options (keyword-only; `verbose`, `follow_symlinks`, `cache`, `cache_size` as above):

    .. BEGIN GENERATED LoaderOptions doc
    `batch_size` (default 16): samples per batch, per rank (>= 1)
    `shuffle` (default True): shuffle the samples of every epoch (Python also takes
        "chunks": shuffle stored chunks, then samples within `shuffle_window` of them)
    `seed` (default 0): seed of the shuffle; batches are a pure function of (seed, epoch,
        rank, world_size, batch); None: a seed drawn from the OS, reported by state_dict()
        (>= 0)
    `drop_last` (default False): drop the incomplete last batch; else it is padded by
        wrapping around (`batch.padding`)
    `threads` (default None): reader/decoder threads; None: one per CPU this process may run
        on (>= 1)
    `prefetch` (default 2): batches assembled ahead of the consumer (in [1, 4096])
    `io_concurrency` (default None): chunk reads kept in flight while the threads decode;
        None: the store's preference, 32 for local files (in [1, 65536])
    `read_ahead` (default True): plan the next batch and submit its chunk reads before this
        one decodes
    `rank` (default None): this process's rank; None: from the launcher (chute.distributed:
        mpi4py, torchrun, Open MPI, PMI, Slurm), else 0 (>= 0)
    `world_size` (default None): number of ranks sharing each epoch; None: from the
        launcher, else 1 (>= 1)
    `pad_to_batch` (default False): allow batch_size x world_size above the sample count
        (the one batch wraps around)
    `timeout` (default None): seconds to wait for a batch before raising ReadTimeoutError
        and cancelling the epoch; None: wait forever (in [0.001, 1000000000])
    `shuffle_block` (default None): samples per stored chunk for the chunk-aware shuffle
        (shuffle="chunks"); None: the dataset's chunk size (>= 1)
    `shuffle_window` (default 4): chunk-aware shuffle: chunks whose samples are shuffled
        together (>= 1)
    `indices` (default None): the sample numbers an epoch draws from (a subset, a stride, an
        order; shuffle=False keeps it); None: every sample (>= 0)
    `pin_memory` (default False): page-locked (CUDA) batch buffers: a framework's
        non_blocking copy to the GPU is one DMA from them (an error without a CUDA driver
        and GPU)
    `device` (default None): copy each batch to this GPU ("cuda", "cuda:N", a torch.device
        or a JAX GPU device) on chute's own stream as soon as it is assembled; `prefetch`
        then counts device batches; None: batches stay in host memory
    .. END GENERATED

    `pin_memory=True` makes the batch buffers page-locked host memory (CUDA), so
    `tensor.cuda(non_blocking=True)` is one DMA from them; it needs a CUDA driver and GPU and is
    an error without one. `device="cuda:0"` (a string, a torch.device or a JAX GPU device) copies
    each batch to that GPU on chute's own stream as soon as it is assembled, from page-locked
    buffers whatever `pin_memory` says (`prefetch` then counts device batches): the batch's
    arrays are DLPack exporters of device memory (`torch.from_dlpack`,
    `jax.numpy.from_dlpack`), whose consumer's stream is ordered after chute's copy.
    """

    def __init__(
        self,
        data: Mapping[str, str] | Dataset,
        *,
        # BEGIN GENERATED LoaderOptions signature
        batch_size: int = 16,
        shuffle: bool | Literal["chunks"] = True,
        seed: int | None = 0,
        drop_last: bool = False,
        threads: int | None = None,
        prefetch: int = 2,
        io_concurrency: int | None = None,
        read_ahead: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        pad_to_batch: bool = False,
        timeout: float | None = None,
        shuffle_block: int | None = None,
        shuffle_window: int = 4,
        indices: Sequence[int] | None = None,
        pin_memory: bool = False,
        device: str | Any | None = None,
        # END GENERATED
        verbose: bool | None = None,
        follow_symlinks: bool | None = None,
        cache: str | os.PathLike[str] | None = None,
        cache_size: int | None = None,
    ) -> None:
        given = {name: value for name, value in locals().items() if name not in ("self", "data")}
        options, chunk_shuffle = _loader_options(data, locals())
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
            options.rank, options.world_size = rank, world_size
            options.validate()
            quiet = (not verbose) if verbose is not None else _quiet_from_env()
            if info.source != "default" and not quiet:
                _log_rank_once(rank, world_size, source)
        # data is a Dataset or a mapping of paths (checked above)
        dataset = (
            data
            if isinstance(data, Dataset)
            else packed(data, follow_symlinks=follow_symlinks, cache=cache, cache_size=cache_size)
        )
        if chunk_shuffle:
            block = options.shuffle_block or dataset._sample_chunk or 0
            if block < 1:
                raise _invalid(
                    'shuffle="chunks" needs shuffle_block (samples per chunk along the sample '
                    "axis) for this dataset"
                )
            options.shuffle_block = block
        self.dataset = dataset
        # What an unpickled copy is made with: these options, the seed drawn and the ranks found
        # here, over the dataset (which went through packed() when `data` was paths).
        given.update(seed=options.seed, rank=rank, world_size=world_size,
                     device=options.device or None, follow_symlinks=None, cache=None,
                     cache_size=None)  # fmt: skip
        self._given = {name: _pickling.kept(value) for name, value in given.items()}
        self.batch_size = options.batch_size
        self.rank = rank
        self.world_size = world_size
        self.rank_source = source
        self.timeout = options.timeout
        self._args = (dataset._core, options)
        self.device = options.device or None
        self._pid = os.getpid()
        self._runs = 0  # epochs begun, so an abandoned loop stops only its own
        self._last_epoch: int | None = None  # the last epoch begun (for a fork child)
        self._restore_pending = False
        self._ended_early = False  # the last loop was left before its epoch's end
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
        self._ended_early = False
        self._runs += 1
        return self._batches(self._runs)

    def epoch(self, epoch: int, start_batch: int = 0) -> Iterator[Batch]:
        """Iterates epoch `epoch` from batch `start_batch`."""
        epoch = _integer("epoch", epoch, 0, _INT64_MAX)
        start_batch = _integer("start_batch", start_batch, 0, len(self))
        self._core.begin_epoch(epoch, start_batch)
        self._last_epoch = epoch
        self._restore_pending = False
        self._ended_early = False
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
        except BaseException as error:
            # Ctrl-C, an error, or a loop left early (GeneratorExit): join this epoch's thread
            # now, unless another epoch has begun since. The next `for` runs the next epoch.
            if run == self._runs:
                core.stop()
                self._ended_early = isinstance(error, GeneratorExit)
            raise

    def state_dict(self) -> dict[str, int]:
        """The position to resume from: {"seed", "epoch", "next_batch"}, plus "batch_size",
        "world_size" and "dataset" (a fingerprint) so that it is not restored into a loader over
        other data. It is always where the next iteration starts: inside a loop, the batch after
        the last one yielded; after an epoch's end or a loop left with `break`, the next epoch's
        first batch (what the next `for` runs); after load_state_dict(), the state loaded."""
        seed, epoch, next_batch, batch_size, world_size, dataset = self._core.state()
        if self._ended_early and not self._restore_pending and self._last_epoch is not None:
            epoch, next_batch = self._last_epoch + 1, 0
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
        self._ended_early = False

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

    def __reduce__(self) -> tuple:
        """Pickled as its dataset's recipe, its options and state_dict(): where it is unpickled
        (a spawn or forkserver worker) a new Loader over the dataset opened again resumes where
        this one's next `for` would start."""
        return (_unpickled_loader, (self.dataset, self._given, self.state_dict()))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
