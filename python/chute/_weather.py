"""Selections by coordinate value for chute.windows(): dates, steps, levels, area, grid shards.

Everything here turns values into positions (time indices, offsets in store steps, lat/lon index
ranges); the core reads by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _chute
from ._array import Group

TIME_NAMES = ("time", "valid_time")
LAT_NAMES = ("lat", "latitude")
LON_NAMES = ("lon", "longitude")


def find_coordinate(group: Group | dict, names: Sequence[str]) -> str | None:
    for name in names:
        if name in group and group[name].ndim == 1:
            return name
    return None


def as_timedelta(value: Any, what: str) -> np.timedelta64:
    """ "6h", "30min", "1D", numpy/pandas/datetime timedeltas -> timedelta64[ns]."""
    if isinstance(value, str):
        import re

        match = re.fullmatch(r"\s*([+-]?\d+)\s*([a-zA-Z]+)\s*", value)
        units = {"h": "h", "hour": "h", "hours": "h", "d": "D", "day": "D", "days": "D",
                 "min": "m", "m": "m", "minutes": "m", "s": "s", "seconds": "s"}  # fmt: skip
        if not match or match.group(2).lower() not in units:
            raise _chute.InvalidArgumentError(
                f"{what} {value!r} is not a time step such as '6h', '30min' or '1D'"
            )
        return np.timedelta64(int(match.group(1)), units[match.group(2).lower()]).astype(
            "timedelta64[ns]"
        )
    try:
        return np.timedelta64(value).astype("timedelta64[ns]")
    except (TypeError, ValueError) as error:
        raise _chute.InvalidArgumentError(f"{what} {value!r} is not a time step") from error


def as_datetime(value: Any, what: str) -> np.datetime64:
    try:
        return np.datetime64(value).astype("datetime64[ns]")
    except (TypeError, ValueError) as error:
        raise _chute.InvalidArgumentError(f"{what} {value!r} is not a date") from error


class TimeAxis:
    """The decoded time coordinate of a group and its store step (the most common difference)."""

    def __init__(self, group: Group, path: str):
        name = find_coordinate(group, TIME_NAMES)
        if name is None:
            raise _chute.InvalidArgumentError(
                f"group {path!r} has no 1-D time coordinate ({' or '.join(TIME_NAMES)}); "
                "select by index with time_range instead"
            )
        self.name = name
        values = np.asarray(group[name][:])
        if values.dtype.kind != "M":
            raise _chute.InvalidArgumentError(
                f"time coordinate {name!r} of {path!r} has no 'units' of the form "
                f"'<unit> since <date>' (read as {values.dtype})"
            )
        self.values = values.astype("datetime64[ns]")
        missing = np.flatnonzero(np.isnat(self.values))
        if len(missing):
            raise _chute.InvalidArgumentError(
                f"time coordinate {name!r} of {path!r} has {len(missing)} missing date(s) (NaT: "
                f"a fill value or NaN), the first at index {missing[0]}; selecting windows by "
                "date needs every date (select by index with time_range instead)"
            )
        if len(self.values) > 1 and np.any(np.diff(self.values) <= np.timedelta64(0)):
            raise _chute.InvalidArgumentError(f"time coordinate {name!r} is not increasing")
        diffs = np.diff(self.values)
        if len(diffs):
            steps, counts = np.unique(diffs, return_counts=True)
            self.step = steps[np.argmax(counts)]
        else:
            self.step = np.timedelta64(1, "h").astype("timedelta64[ns]")

    def fill_gaps(self) -> list[int]:
        """Makes the axis a regular grid (first to last date, at the store step); returns the
        store index read for each grid date: itself, or the closest present date (the earlier
        one on a tie)."""
        grid = np.arange(self.values[0], self.values[-1] + self.step, self.step)
        right = np.clip(np.searchsorted(self.values, grid), 0, len(self.values) - 1)
        left = np.clip(right - 1, 0, len(self.values) - 1)
        take_left = np.abs(grid - self.values[left]) <= np.abs(self.values[right] - grid)
        self.values = grid
        return np.where(take_left, left, right).astype(np.int64).tolist()

    def offsets(self, steps: Sequence[Any], unit: np.timedelta64, what: str) -> list[int]:
        """Offsets in store steps from integers (multiples of `unit`) or timedeltas."""
        out = []
        for step in steps:
            if isinstance(step, (int, np.integer)) and not isinstance(step, bool):
                delta = int(step) * unit
            else:
                delta = as_timedelta(step, what)
            if delta % self.step != np.timedelta64(0):
                raise _chute.InvalidArgumentError(
                    f"{what} {step!r} is not a multiple of the store's time step "
                    f"{_hours(self.step)}"
                )
            out.append(int(delta // self.step))
        return out

    def sample_times(
        self, start: Any, end: Any, frequency: np.timedelta64, offsets: Sequence[int], gaps: str
    ) -> list[int]:
        """Indices t whose window (t + each offset) lies in [start, end] with every date present.

        Sample dates lie on the grid start + k × frequency. gaps="error" refuses a store whose
        time axis misses dates inside [start, end]; gaps="skip" drops the windows touching them.
        """
        times = self.values
        first, last = times[0], times[-1]
        lo = as_datetime(start, "start") if start is not None else first
        hi = as_datetime(end, "end") if end is not None else last
        for value, what in ((lo, "start"), (hi, "end")):
            if value < first or value > last:
                raise _chute.InvalidArgumentError(
                    f"{what} {np.datetime_as_string(value, 's')} is outside the store's dates "
                    f"{np.datetime_as_string(first, 's')} .. {np.datetime_as_string(last, 's')}"
                )
        if lo > hi:
            raise _chute.InvalidArgumentError("start is after end")
        inside = (times >= lo) & (times <= hi)
        expected = np.arange(lo, hi + np.timedelta64(1, "ns"), self.step)
        missing = np.setdiff1d(expected, times[inside])
        if len(missing) and gaps == "error":
            shown = ", ".join(np.datetime_as_string(m, "s") for m in missing[:5])
            raise _chute.InvalidArgumentError(
                f"the time axis misses {len(missing)} date(s) between start and end ({shown}"
                f"{', ...' if len(missing) > 5 else ''}); pass gaps='skip' to drop the windows "
                "that touch them"
            )
        if gaps not in ("error", "skip"):
            raise _chute.InvalidArgumentError(
                f"gaps must be 'error', 'skip' or 'nearest', got {gaps!r}"
            )
        index = {t: i for i, t in enumerate(times.astype(np.int64))}
        chosen = []
        for t in np.flatnonzero(inside):
            date = times[t]
            if (date - lo) % frequency != np.timedelta64(0):
                continue
            ok = True
            for offset in offsets:
                want = date + offset * self.step
                j = index.get(int(want.astype(np.int64)))
                if j is None or want < lo or want > hi or j != t + offset:
                    ok = False
                    break
            if ok:
                chosen.append(int(t))
        if not chosen:
            raise _chute.InvalidArgumentError(
                f"no window with offsets {list(offsets)} (store steps of {_hours(self.step)}) "
                f"fits between {np.datetime_as_string(lo, 's')} and "
                f"{np.datetime_as_string(hi, 's')}"
            )
        return chosen


def _hours(delta: np.timedelta64) -> str:
    hours = delta / np.timedelta64(1, "h")
    return f"{hours:g}h"


def area_ranges(
    group: Group, area: Sequence[float] | None, path: str
) -> tuple[tuple[int, int], tuple[int, int]]:
    """(lat_start, lat_stop), (lon_start, lon_stop) of the box (north, west, south, east)."""
    if area is None:
        return (0, -1), (0, -1)
    if len(area) != 4:
        raise _chute.InvalidArgumentError("area is (north, west, south, east)")
    north, west, south, east = (float(v) for v in area)
    lat_name = find_coordinate(group, LAT_NAMES)
    lon_name = find_coordinate(group, LON_NAMES)
    if lat_name is None or lon_name is None:
        raise _chute.InvalidArgumentError(
            f"area needs 1-D latitude and longitude coordinates in {path!r}"
        )
    lat = np.asarray(group[lat_name][:], dtype=np.float64)
    lon = np.asarray(group[lon_name][:], dtype=np.float64)
    if south > north:
        raise _chute.InvalidArgumentError(f"area: south {south} is north of north {north}")
    if lon.max() > 180 and west < 0:
        west, east = west % 360, east % 360
    if west > east:
        raise _chute.UnsupportedError(
            f"area: west {west} > east {east} (a box across the longitude seam) is not supported"
        )
    return (
        _contiguous(np.flatnonzero((lat >= south) & (lat <= north)), lat_name),
        _contiguous(np.flatnonzero((lon >= west) & (lon <= east)), lon_name),
    )


def _contiguous(indices: np.ndarray, name: str) -> tuple[int, int]:
    if len(indices) == 0:
        raise _chute.InvalidArgumentError(f"area selects no {name} values")
    if indices[-1] - indices[0] + 1 != len(indices):
        raise _chute.InvalidArgumentError(f"area selects {name} values that are not contiguous")
    return int(indices[0]), int(indices[-1]) + 1


def shard_rows(lat: tuple[int, int], height: int, shard: tuple[int, int]) -> tuple[int, int]:
    """Rank i of n reads rows [start + i·rows/n, start + (i+1)·rows/n) of the selected rows."""
    i, n = (int(v) for v in shard)
    if n < 1 or not 0 <= i < n:
        raise _chute.InvalidArgumentError(f"grid_shard must be (i, n) with 0 <= i < n, got {shard}")
    start, stop = lat[0], (height if lat[1] < 0 else lat[1])
    rows = stop - start
    if rows < n:
        raise _chute.InvalidArgumentError(f"grid_shard: {rows} latitude rows for {n} shards")
    return start + i * rows // n, start + (i + 1) * rows // n
