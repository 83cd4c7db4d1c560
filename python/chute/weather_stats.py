"""Normalisation statistics of a weather store: `chute stats STORE --start --end --out stats.zarr`.

For each variable (per level for variables with levels) over the chosen dates: mean, standard
deviation (population, ddof=0), minimum and maximum of the CF-decoded values, and the mean and
standard deviation of the differences between consecutive time steps (for residual targets),
all NaN-aware; static (lat, lon) fields get the first four over the grid (NaN differences) (NaNs are left out of every statistic) and accumulated in float64.

One pass: the time range is cut into blocks read by chute (decoded, the GIL released while
reading) on a thread pool; each block gives (count, mean, M2, min, max) per channel, merged with
Chan et al.'s pairwise update, so the result does not depend on the thread count beyond float64
rounding. Differences at block boundaries are taken from the last step of the previous block.

The output is a Zarr group with arrays mean/<variable>, std/<variable>, min/<variable>,
max/<variable>, diff_mean/<variable>, diff_std/<variable>, shaped (level,) or ();
`chute.windows(..., statistics="stats.zarr")` reads mean/ and std/ from it.

Per grid point (`per_gridpoint=True`, `chute stats --per-gridpoint`): the same arrays over time
only, shaped (level, lat, lon) or (lat, lon) (lat before lon whatever the stored order, every
level of the store, zarr v3 `dimension_names` from the variable's own), and the group attribute
`"per_gridpoint": true`; static fields keep their () statistics over the grid. A point with no
valid value in the period has NaN mean, std, min and max (as NumPy's nan-functions give).

    python -m chute.weather_stats STORE --start 2016-01-01 --end 2019-12-31T18 --out stats.zarr
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import _chute
from ._array import Array, open_group
from ._weather import TIME_NAMES, TimeAxis, as_datetime, find_coordinate

__all__ = ["compute_statistics", "statistics"]

_LEVEL_NAMES = ("level", "pressure_level", "isobaricInhPa", "plev", "lev")
_SPACE_NAMES = ("lat", "latitude", "lon", "longitude")


class _Moments:
    """count, mean, M2, min, max per channel (float64), mergeable."""

    def __init__(self, channels: int):
        self.count = np.zeros(channels)
        self.mean = np.zeros(channels)
        self.m2 = np.zeros(channels)
        self.min = np.full(channels, np.inf)
        self.max = np.full(channels, -np.inf)

    @staticmethod
    def of(values: np.ndarray) -> _Moments:
        """values: (channels, n) float64 with NaNs."""
        m = _Moments(values.shape[0])
        valid = ~np.isnan(values)
        m.count = valid.sum(axis=1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            m.mean = np.where(m.count > 0, np.nansum(values, axis=1) / np.maximum(m.count, 1), 0)
            centred = np.where(valid, values - m.mean[:, None], 0.0)
            m.m2 = (centred * centred).sum(axis=1)
        if values.shape[1]:
            with np.errstate(invalid="ignore"):
                m.min = np.where(m.count > 0, np.nanmin(np.where(valid, values, np.inf), axis=1),
                                 np.inf)  # fmt: skip
                m.max = np.where(m.count > 0, np.nanmax(np.where(valid, values, -np.inf), axis=1),
                                 -np.inf)  # fmt: skip
        return m

    def merge(self, other: _Moments) -> None:
        n = self.count + other.count
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = other.mean - self.mean
            safe = np.maximum(n, 1)
            self.mean = np.where(n > 0, self.mean + delta * other.count / safe, 0)
            self.m2 = self.m2 + other.m2 + delta * delta * self.count * other.count / safe
        self.count = n
        self.min = np.minimum(self.min, other.min)
        self.max = np.maximum(self.max, other.max)

    def std(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, np.sqrt(self.m2 / np.maximum(self.count, 1)), np.nan)


def _is_static(array: Array) -> bool:
    return array.ndim == 2 and all(n in _SPACE_NAMES for n in array.dims)


def _layout(array: Array, name: str) -> tuple[int, int | None]:
    dims = array.dims
    time = next((d for d, n in enumerate(dims) if n in TIME_NAMES), None)
    if time is None:
        raise _chute.InvalidArgumentError(f"variable {name!r} ({', '.join(dims)}) has no time axis")
    level = next((d for d, n in enumerate(dims) if n in _LEVEL_NAMES), None)
    for d, n in enumerate(dims):
        if d not in (time, level) and n not in _SPACE_NAMES:
            raise _chute.InvalidArgumentError(
                f"variable {name!r} has dimension {n!r} that is not time/level/lat/lon"
            )
    return time, level


def _space_axes(dims: tuple[str, ...]) -> list[int]:
    """The positions of the latitude and the longitude axes, latitude first."""
    lat = [d for d, n in enumerate(dims) if n in _SPACE_NAMES[:2]]
    lon = [d for d, n in enumerate(dims) if n in _SPACE_NAMES[2:]]
    return lat + lon


def _channels_first(block: np.ndarray, time: int, level: int | None,
                    space: list[int] | None = None) -> np.ndarray:  # fmt: skip
    """(steps, channels, points) float64 from a block of any axis order; points in the order of
    `space` (default: as stored)."""
    axes = [time] + ([level] if level is not None else [])
    rest = space if space is not None else [d for d in range(block.ndim) if d not in axes]
    moved = np.transpose(block, axes + rest)
    steps = moved.shape[0]
    channels = moved.shape[1] if level is not None else 1
    return moved.reshape(steps, channels, -1).astype(np.float64)


def compute_statistics(
    path: str | list[str],
    variables: list[str] | None = None,
    start: Any = None,
    end: Any = None,
    threads: int | None = None,
    block: int = 8,
    per_gridpoint: bool = False,
) -> dict[str, dict[str, np.ndarray]]:
    """{variable: {"mean", "std", "min", "max", "diff_mean", "diff_std"}} over [start, end];
    per_gridpoint: shaped (level?, lat, lon) over time only (see the module doc)."""
    from . import _options as check

    if not isinstance(path, (list, tuple)):  # a list of files is joined along time
        path = check.path("path", path)
    if variables is not None:
        variables = check.non_empty("variables", check.texts("variables", variables))
    if threads is not None:
        threads = check.integer("threads", threads, 1, 16 * (os.cpu_count() or 1), " or None")
    block = check.integer("block", block, 1, 2**31)
    if not isinstance(per_gridpoint, (bool, np.bool_)):
        raise _chute.InvalidArgumentError(
            f"per_gridpoint must be True or False, got {per_gridpoint!r}"
        )
    group = open_group(path, decode_cf=True)
    axis = TimeAxis(group, path)
    first, last = axis.values[0], axis.values[-1]
    bounds = []
    for value, what in ((start, "start"), (end, "end")):
        date = None if value is None else as_datetime(value, what)
        if date is not None and (date < first or date > last):
            raise _chute.InvalidArgumentError(
                f"{what} {np.datetime_as_string(date, 's')} is outside the store's dates "
                f"{np.datetime_as_string(first, 's')} .. {np.datetime_as_string(last, 's')}"
            )
        bounds.append(date)
    lo = 0 if bounds[0] is None else int(np.searchsorted(axis.values, bounds[0]))
    hi = len(axis.values)
    if bounds[1] is not None:
        hi = int(np.searchsorted(axis.values, bounds[1], side="right"))
    if hi - lo < 1:
        raise _chute.InvalidArgumentError(f"no time steps between {start} and {end}")
    if variables is None:
        coords = {axis.name, find_coordinate(group, _LEVEL_NAMES)}
        variables = [
            n for n in group
            if "/" not in n and n not in coords and n not in group.strings
            and (any(d in TIME_NAMES for d in group[n].dims) or _is_static(group[n]))
        ]  # fmt: skip
    results: dict[str, dict[str, np.ndarray]] = {}
    pool = ThreadPoolExecutor(threads or os.cpu_count() or 1)
    try:
        for name in variables:
            if name not in group:
                raise _chute.InvalidArgumentError(f"variable {name!r} is not in {path!r}")
            if name in group.strings:
                raise _chute.InvalidArgumentError(
                    f"variable {name!r} of {path!r} is a string variable: strings are labels, "
                    "never statistics or batch input"
                )
            array = group[name]
            if _is_static(array):  # a (lat, lon) field: its statistics over the grid
                m = _Moments.of(np.asarray(array[...], dtype=np.float64).reshape(1, -1))
                nan = np.float64(np.nan)
                results[name] = {
                    "mean": m.mean[0], "std": m.std()[0], "min": m.min[0], "max": m.max[0],
                    "diff_mean": nan, "diff_std": nan,
                }  # fmt: skip
                continue
            time, level = _layout(array, name)
            space = _space_axes(array.dims)

            def rows(values: np.ndarray) -> np.ndarray:
                """(steps, channels, points) -> the rows one _Moments entry summarises: a
                channel's every value, or per grid point a (channel, point)'s steps."""
                if per_gridpoint:
                    steps, channels, points = values.shape
                    return np.transpose(values, (1, 2, 0)).reshape(channels * points, steps)
                return np.moveaxis(values, 0, 1).reshape(values.shape[1], -1)

            def one_block(b0: int, array=array, time=time, level=level, space=space) -> tuple:
                b1 = min(hi, b0 + block)
                first = max(lo, b0 - 1)  # the step before, for the difference at the boundary
                index = [slice(None)] * array.ndim
                index[time] = slice(first, b1)
                values = _channels_first(array[tuple(index)], time, level, space)
                own = values[b0 - first :]
                return _Moments.of(rows(own)), _Moments.of(rows(np.diff(values, axis=0)))

            total = diff_total = None
            for stats, diff in pool.map(one_block, range(lo, hi, block)):
                if total is None:
                    total, diff_total = stats, diff
                else:
                    total.merge(stats)
                    diff_total.merge(diff)
            squeeze = level is None
            out = {
                "mean": total.mean, "std": total.std(), "min": total.min, "max": total.max,
                "diff_mean": diff_total.mean, "diff_std": diff_total.std(),
            }  # fmt: skip
            if per_gridpoint:
                grid = tuple(array.shape[d] for d in space)
                shape = grid if squeeze else (array.shape[level], *grid)
                empty = {"mean": total.count == 0, "diff_mean": diff_total.count == 0}
                for kind, values in out.items():
                    where = empty["diff_mean" if kind.startswith("diff") else "mean"]
                    out[kind] = np.where(where, np.nan, values).reshape(shape)
                results[name] = out
                continue
            results[name] = {k: (v[0] if squeeze else v) for k, v in out.items()}
    finally:
        pool.shutdown()
    return results


def statistics(path: str, out: str, variables: list[str] | None = None, start: Any = None,
               end: Any = None, threads: int | None = None,
               per_gridpoint: bool = False) -> dict:  # fmt: skip
    """Computes the statistics of `path` (see the module doc) and writes them to Zarr `out`."""
    import zarr

    from . import _options as check

    out = check.path("out", out)

    results = compute_statistics(path, variables, start, end, threads,
                                 per_gridpoint=per_gridpoint)  # fmt: skip
    dims = {}
    if per_gridpoint:
        group = open_group(path)
        for name in results:
            d = group[name].dims
            level = [n for n in d if n in _LEVEL_NAMES]
            dims[name] = tuple(level + [d[i] for i in _space_axes(d)])
    root = zarr.open_group(out, mode="w", zarr_format=3)
    root.attrs.update({"source": os.fspath(path), "start": str(start), "end": str(end),
                       "per_gridpoint": bool(per_gridpoint)})  # fmt: skip
    for name, stats in results.items():
        for kind, values in stats.items():
            data = np.asarray(values, dtype=np.float64)
            names = dims.get(name) if data.ndim > 1 else None
            array = root.require_group(kind).create_array(
                name, shape=data.shape, dtype="float64", dimension_names=names
            )
            array[...] = data
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chute stats", description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("--out", required=True)
    parser.add_argument("--start")
    parser.add_argument("--end")
    parser.add_argument("--variables", nargs="*")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--per-gridpoint", action="store_true",
                        help="statistics over time per (level, lat, lon) point")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        results = statistics(args.store, args.out, args.variables, args.start, args.end,
                             args.threads, per_gridpoint=args.per_gridpoint)  # fmt: skip
    except _chute.Error as error:
        print(f"chute stats: {error}", file=sys.stderr)
        return 1
    summary = {
        name: {k: np.round(np.atleast_1d(v), 6).tolist() for k, v in s.items()}
        for name, s in results.items()
    }
    if args.per_gridpoint:  # the arrays are in the group; print their shapes only
        summary = {
            name: {k: list(np.shape(v)) for k, v in s.items()} for name, s in results.items()
        }
    print(json.dumps({"out": args.out, "variables": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
