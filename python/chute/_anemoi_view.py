"""The view of anemoi datasets that chute.anemoi() reads: stores opened by meaning, then
selected, subset, concatenated and joined as anemoi-datasets' open_dataset does.

A view is a list of dates × a list of variables; each date is made of parts, a part being the
reads of some stored variables of one store at one time. Everything here is metadata: the
samples are read by the C++ AnemoiDataset (src/chute/dataset/anemoi_dataset.h).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _chute

STATISTICS = ("mean", "stdev", "minimum", "maximum")


def _bad(store: str, attribute: str, message: str) -> Exception:
    return _chute.InvalidMetadataError(f"anemoi dataset {store!r}: {attribute} {message}")


def parse_frequency(value: Any, what: str) -> np.timedelta64:
    """ "6h", "30m", "1d", "3600s", an integer number of hours, or a timedelta -> timedelta64[s]
    (anemoi-datasets' spellings)."""
    import datetime
    import re

    if isinstance(value, np.timedelta64):
        return value.astype("timedelta64[s]")
    if isinstance(value, datetime.timedelta):
        return np.timedelta64(int(value.total_seconds()), "s")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return np.timedelta64(int(value) * 3600, "s")
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", value)
        seconds = {"": 3600, "h": 3600, "m": 60, "min": 60, "s": 1, "d": 86400}
        if match and match.group(2).lower() in seconds:
            return np.timedelta64(int(match.group(1)) * seconds[match.group(2).lower()], "s")
    raise _chute.InvalidArgumentError(f"{what} {value!r} is not a frequency such as '6h' or '1d'")


def parse_date(value: Any, what: str) -> np.datetime64:
    import datetime

    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = str(int(value))  # a year, as anemoi-datasets takes it
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    try:
        return np.datetime64(value).astype("datetime64[s]")
    except (TypeError, ValueError) as error:
        raise _chute.InvalidArgumentError(f"{what} {value!r} is not a date") from error


class View:
    """dates (datetime64[s]), variables (names), missing (set of date positions), frequency;
    parts(k) -> the structure id and the times of date k's parts; structures[s] -> (parts,
    placement): parts are (source, stored variable indices), placement[v] is (part, position)
    of variable v. statistics: name -> float64 array per variable. Grid: latitudes,
    longitudes; sources: the opened `data` arrays."""

    def __init__(self) -> None:
        self.name = ""
        self.dates = np.zeros(0, "datetime64[s]")
        self.variables: list[str] = []
        self.missing: set[int] = set()
        self.frequency = np.timedelta64(0, "s")
        self.structures: list[tuple[list[tuple[int, list[int]]], list[tuple[int, int]]]] = []
        self.date_structure = np.zeros(0, np.int64)
        self.date_times: list[tuple[int, ...]] = []
        self.statistics: dict[str, np.ndarray] = {}
        self.latitudes = np.zeros(0)
        self.longitudes = np.zeros(0)
        self.sources: list[Any] = []
        self.source_names: list[str] = []
        self.attrs: dict = {}
        self.members = 1  # stored ensemble members
        self.member_map: list[int] = [0]  # the stored member of each member of the view
        self.resolution: Any = None

    @property
    def name_to_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.variables)}

    def copy(self) -> View:
        out = View()
        out.__dict__.update(self.__dict__)
        return out


# --------------------------------------------------------------------------- opening a store


def open_store(path: Any, cache: Any = None, cache_size: Any = None) -> View:
    """One anemoi-datasets / ufs2arco store (a local path or a URL), every attribute and
    companion array checked."""
    from ._array import open_group

    store = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    try:
        group = open_group(path, cache=cache, cache_size=cache_size)
    except _chute.NotFoundError as error:
        raise _chute.NotFoundError(f"anemoi dataset {store!r}: {error}") from None
    return view_of_group(group, store)


def view_of_group(group: Any, store: str) -> View:
    attrs = dict(group.attrs)
    if "data" not in group:
        raise _bad(store, "array 'data'", f"is missing (the group has {sorted(group)[:12]})")
    data = group["data"]
    if data.ndim != 4:
        raise _bad(
            store,
            "array 'data'",
            f"has shape {data.shape}, expected 4 dimensions (time, variable, ensemble, cell)",
        )
    if data.dtype.kind != "f":
        raise _bad(store, "array 'data'", f"has dtype {data.dtype}, expected float32")
    n_dates, n_vars, n_members, n_cells = data.shape

    variables = attrs.get("variables")
    if variables is None:
        raise _bad(store, "attribute 'variables'", "is missing")
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        raise _bad(store, "attribute 'variables'", f"must be a list of names, got {variables!r}")
    if len(variables) != n_vars:
        raise _bad(
            store,
            "attribute 'variables'",
            f"names {len(variables)} variables but array 'data' has {n_vars} (axis 1)",
        )
    if len(set(variables)) != len(variables):
        raise _bad(store, "attribute 'variables'", "names a variable twice")
    name_to_index = attrs.get("name_to_index")
    if name_to_index is not None:
        expected = {name: i for i, name in enumerate(variables)}
        if not isinstance(name_to_index, dict) or dict(name_to_index) != expected:
            raise _bad(
                store,
                "attribute 'name_to_index'",
                "disagrees with attribute 'variables' (expected each name at its position)",
            )

    frequency_attr = attrs.get("frequency")
    frequency = None
    if frequency_attr is not None:
        try:
            frequency = parse_frequency(frequency_attr, "frequency")
        except _chute.InvalidArgumentError:
            raise _bad(
                store, "attribute 'frequency'", f"is {frequency_attr!r}, not a frequency like '6h'"
            ) from None
        if frequency <= np.timedelta64(0, "s"):
            raise _bad(store, "attribute 'frequency'", f"is {frequency_attr!r}, not positive")
    if "dates" in group:
        dates_array = group["dates"]
        if dates_array.ndim != 1 or dates_array.shape[0] != n_dates:
            raise _bad(
                store,
                "array 'dates'",
                f"has shape {dates_array.shape}, expected ({n_dates},) as array 'data' has "
                f"{n_dates} dates",
            )
        dates = np.asarray(dates_array[:])
        if dates.dtype.kind != "M":
            raise _bad(store, "array 'dates'", f"has dtype {dates.dtype}, expected datetime64")
        dates = dates.astype("datetime64[s]")
    else:
        start = attrs.get("start_date")
        if start is None or frequency is None:
            raise _bad(
                store,
                "array 'dates'",
                "is missing, and so are attributes 'start_date'/'frequency' to make the dates",
            )
        first = parse_date(start, f"anemoi dataset {store!r}: attribute 'start_date'")
        dates = first + np.arange(n_dates) * frequency
    if n_dates > 1:
        steps = np.diff(dates)
        if np.any(steps <= np.timedelta64(0, "s")):
            raise _bad(store, "array 'dates'", "is not increasing")
        if frequency is None:
            frequency = steps.min()
        if np.any(steps != frequency):
            raise _bad(
                store,
                "array 'dates'",
                f"is not regular at attribute 'frequency' {frequency_attr!r} (steps "
                f"{sorted({str(s) for s in np.unique(steps)})[:4]})",
            )
    elif frequency is None:
        frequency = np.timedelta64(3600, "s")
    for key, value in (("start_date", dates[0] if n_dates else None), ("end_date", dates[-1])):
        if key in attrs and n_dates:
            stated = parse_date(attrs[key], f"anemoi dataset {store!r}: attribute {key!r}")
            if stated != value:
                raise _bad(
                    store,
                    f"attribute {key!r}",
                    f"is {attrs[key]!r} but array 'dates' has {np.datetime_as_string(value)}",
                )
    missing: set[int] = set()
    missing_attr = attrs.get("missing_dates", [])
    if not isinstance(missing_attr, list):
        raise _bad(store, "attribute 'missing_dates'", f"must be a list, got {missing_attr!r}")
    position = {int(d): i for i, d in enumerate(dates.astype(np.int64))}
    for text in missing_attr:
        date = parse_date(text, f"anemoi dataset {store!r}: attribute 'missing_dates'")
        i = position.get(int(date.astype(np.int64)))
        if i is None:
            raise _bad(
                store, "attribute 'missing_dates'", f"names {text!r}, which is not one of the dates"
            )
        missing.add(i)

    ensemble_dimension = attrs.get("ensemble_dimension", 2)
    if ensemble_dimension != 2:
        raise _bad(
            store,
            "attribute 'ensemble_dimension'",
            f"is {ensemble_dimension!r}, expected 2 (data is time, variable, ensemble, cell)",
        )

    statistics: dict[str, np.ndarray] = {}
    for name in STATISTICS:
        if name in group:
            values = np.asarray(group[name][:], dtype=np.float64)
            if values.shape != (n_vars,):
                raise _bad(
                    store, f"array {name!r}", f"has shape {values.shape}, expected ({n_vars},)"
                )
            statistics[name] = values
    view = View()
    view.name = store
    for name in ("latitudes", "longitudes"):
        if name in group:
            values = np.asarray(group[name][:], dtype=np.float64)
            if values.shape != (n_cells,):
                raise _bad(
                    store, f"array {name!r}", f"has shape {values.shape}, expected ({n_cells},)"
                )
            setattr(view, name, values)
    view.dates = dates
    view.variables = list(variables)
    view.missing = missing
    view.frequency = frequency
    view.structures = [([(0, list(range(n_vars)))], [(0, v) for v in range(n_vars)])]
    view.date_structure = np.zeros(n_dates, np.int64)
    view.date_times = [(t,) for t in range(n_dates)]
    view.statistics = statistics
    view.sources = [data._core]
    view.source_names = [store]
    view.attrs = attrs
    view.members = n_members
    view.member_map = list(range(n_members))
    view.cells = n_cells
    view.resolution = attrs.get("resolution")
    return view


# --------------------------------------------------------------------------- transformations


def select(view: View, names: Sequence[str], what: str) -> View:
    """The variables `names`, in that order (anemoi-datasets' select=)."""
    index = view.name_to_index
    unknown = [n for n in names if n not in index]
    if unknown:
        raise _chute.InvalidArgumentError(
            f"{what}: {unknown} not among the variables of {view.name!r} ({view.variables})"
        )
    if len(set(names)) != len(names):
        raise _chute.InvalidArgumentError(f"{what} names a variable twice: {list(names)}")
    chosen = [index[n] for n in names]
    out = view.copy()
    out.variables = list(names)
    out.structures = []
    for parts, placement in view.structures:
        new_parts = [(source, list(stored)) for source, stored in parts]
        out.structures.append((new_parts, [placement[v] for v in chosen]))
    out.statistics = {k: v[chosen] for k, v in view.statistics.items()}
    return out


def drop(view: View, names: Sequence[str]) -> View:
    index = view.name_to_index
    unknown = [n for n in names if n not in index]
    if unknown:
        raise _chute.InvalidArgumentError(
            f"drop: {unknown} not among the variables of {view.name!r} ({view.variables})"
        )
    return select(view, [v for v in view.variables if v not in set(names)], "drop")


def subset_dates(view: View, indices: Sequence[int]) -> View:
    indices = list(indices)
    out = view.copy()
    out.dates = view.dates[indices]
    out.date_structure = view.date_structure[indices]
    out.date_times = [view.date_times[i] for i in indices]
    where = {j: i for i, j in enumerate(indices)}
    out.missing = {where[j] for j in view.missing if j in where}
    return out


def start_end(view: View, start: Any, end: Any) -> View:
    """Dates in [start, end] (anemoi-datasets: a year or a month stands for all of it)."""
    lo = _bound(start, "start", first=True) if start is not None else view.dates[0]
    hi = _bound(end, "end", first=False) if end is not None else view.dates[-1]
    chosen = np.flatnonzero((view.dates >= lo) & (view.dates <= hi))
    if len(chosen) == 0:
        raise _chute.InvalidArgumentError(
            f"start {start!r} / end {end!r} select no date of {view.name!r} "
            f"({np.datetime_as_string(view.dates[0])} .. {np.datetime_as_string(view.dates[-1])})"
        )
    return subset_dates(view, chosen.tolist())


def _bound(value: Any, what: str, first: bool) -> np.datetime64:
    """A start/end as anemoi-datasets reads it: a year (2020, "2020"), a month ("2020-03",
    202003), a day ("2020-03-05", 20200305) or a date-time. As end, a year, month or day means
    its last instant."""
    import re

    text = str(value) if isinstance(value, (int, np.integer, str)) else None
    if text is not None and not isinstance(value, bool):
        text = text.strip()
        digits = re.fullmatch(r"(\d{4})(\d{2})?(\d{2})?", text)
        if digits:
            text = "-".join(g for g in digits.groups() if g)
        unit = {4: "Y", 7: "M", 10: "D"}.get(len(text)) if re.fullmatch(r"[\d-]+", text) else None
        if unit is not None:
            try:
                period = np.datetime64(text, unit)
            except ValueError as error:
                raise _chute.InvalidArgumentError(f"{what} {value!r} is not a date") from error
            if first:
                return period.astype("datetime64[s]")
            return (period + np.timedelta64(1, unit)).astype("datetime64[s]") - np.timedelta64(
                1, "s"
            )
    return parse_date(value, what)


def with_frequency(view: View, frequency: Any) -> View:
    wanted = parse_frequency(frequency, "frequency")
    if wanted <= np.timedelta64(0, "s") or wanted % view.frequency != np.timedelta64(0, "s"):
        raise _chute.InvalidArgumentError(
            f"frequency {frequency!r} is not a positive multiple of the frequency of "
            f"{view.name!r} ({_hours(view.frequency)})"
        )
    step = int(wanted // view.frequency)
    out = subset_dates(view, range(0, len(view.dates), step))
    out.frequency = wanted
    return out


def members(view: View, chosen: Sequence[int], offset: int = 0) -> View:
    """The ensemble members `chosen` from 0 (numbers: from 1, offset 1), sorted and without
    repeats as anemoi-datasets' members=/numbers= take them."""
    chosen = sorted({int(m) - offset for m in chosen})
    if not chosen:
        raise _chute.InvalidArgumentError("members is empty")
    for m in chosen:
        if not 0 <= m < len(view.member_map):
            raise _chute.InvalidArgumentError(
                f"members: {m + offset} is not one of the {len(view.member_map)} ensemble members "
                f"of {view.name!r} (members count from 0, numbers from 1)"
            )
    out = view.copy()
    out.member_map = [view.member_map[m] for m in chosen]
    return out


def concat(views: Sequence[View]) -> View:
    """Along time (anemoi-datasets' concat=): same variables, frequency and grid; dates in
    order without overlap."""
    first = views[0]
    out = first.copy()
    out.name = "concat(" + ", ".join(v.name for v in views) + ")"
    dates, structure, times, missing = [], [], [], set()
    out.structures, out.sources, out.source_names = [], [], []
    for v in views:
        if v.variables != first.variables:
            raise _chute.InvalidArgumentError(
                f"concat: {v.name!r} has variables {v.variables}, {first.name!r} has "
                f"{first.variables}"
            )
        if v.frequency != first.frequency:
            raise _chute.InvalidArgumentError(
                f"concat: {v.name!r} has frequency {_hours(v.frequency)}, {first.name!r} has "
                f"{_hours(first.frequency)}"
            )
        _same_grid(first, v, "concat")
        if dates and v.dates[0] <= dates[-1][-1]:
            raise _chute.InvalidArgumentError(
                f"concat: {v.name!r} starts at {np.datetime_as_string(v.dates[0])}, not after "
                f"the previous dataset's end"
            )
        structure_offset = len(out.structures)
        source_offset = len(out.sources)
        for parts, placement in v.structures:
            out.structures.append(
                ([(s + source_offset, stored) for s, stored in parts], list(placement))
            )
        out.sources += v.sources
        out.source_names += v.source_names
        missing |= {i + sum(len(d) for d in dates) for i in v.missing}
        dates.append(v.dates)
        structure.append(v.date_structure + structure_offset)
        times += v.date_times
    out.dates = np.concatenate(dates)
    out.date_structure = np.concatenate(structure)
    out.date_times = times
    out.missing = missing
    out.statistics = dict(first.statistics)  # anemoi-datasets: the first dataset's
    return out


def join(views: Sequence[View]) -> View:
    """Variables side by side (anemoi-datasets' join=): same dates and grid; a variable in
    several datasets is taken from the last, at the place of its first appearance."""
    first = views[0]
    for v in views[1:]:
        if len(v.dates) != len(first.dates) or np.any(v.dates != first.dates):
            raise _chute.InvalidArgumentError(
                f"join: {v.name!r} and {first.name!r} have different dates"
            )
        _same_grid(first, v, "join")
    owner: dict[str, int] = {}
    for i, v in enumerate(views):
        for name in v.variables:
            owner[name] = i
    kept = [
        select(v, [n for n in v.variables if owner[n] == i], "join") for i, v in enumerate(views)
    ]
    kept = [v for v in kept if v.variables] if any(v.variables for v in kept) else kept
    out = first.copy()
    out.name = "join(" + ", ".join(v.name for v in views) + ")"
    out.variables = [n for v in kept for n in v.variables]
    out.sources, out.source_names = [], []
    offsets = []
    for v in kept:
        offsets.append(len(out.sources))
        out.sources += v.sources
        out.source_names += v.source_names
    # A date's structure is the tuple of each member's structure.
    combos: dict[tuple[int, ...], int] = {}
    out.structures, structure, times = [], [], []
    for k in range(len(first.dates)):
        key = tuple(int(v.date_structure[k]) for v in kept)
        if key not in combos:
            combos[key] = len(out.structures)
            parts: list[tuple[int, list[int]]] = []
            placement: list[tuple[int, int]] = []
            for v, s, offset in zip(kept, key, offsets):
                member_parts, member_placement = v.structures[s]
                base = len(parts)
                parts += [(src + offset, stored) for src, stored in member_parts]
                placement += [(p + base, q) for p, q in member_placement]
            out.structures.append((parts, placement))
        structure.append(combos[key])
        times.append(tuple(t for v in kept for t in v.date_times[k]))
    out.date_structure = np.asarray(structure, np.int64)
    out.date_times = times
    out.missing = set().union(*(v.missing for v in views))
    out.statistics = {
        name: np.concatenate([v.statistics[name] for v in kept])
        for name in STATISTICS
        if all(name in v.statistics for v in kept)
    }
    out.frequency = first.frequency
    order = list(dict.fromkeys(n for v in views for n in v.variables))
    return select(out, order, "join") if order != out.variables else out


def _same_grid(a: View, b: View, what: str) -> None:
    if a.cells != b.cells or a.members != b.members:
        raise _chute.InvalidArgumentError(
            f"{what}: {b.name!r} has {b.members} members × {b.cells} cells, {a.name!r} has "
            f"{a.members} × {a.cells}"
        )
    if a.member_map != b.member_map:
        raise _chute.UnsupportedError(
            f"{what}: {b.name!r} and {a.name!r} select different ensemble members; select "
            "members on the combined dataset instead"
        )
    for name in ("latitudes", "longitudes"):
        x, y = getattr(a, name), getattr(b, name)
        if len(x) and len(y) and not np.array_equal(x, y):
            raise _chute.InvalidArgumentError(f"{what}: {b.name!r} and {a.name!r} differ in {name}")


def _hours(delta: np.timedelta64) -> str:
    return f"{delta / np.timedelta64(1, 'h'):g}h"


# --------------------------------------------------------------------------- for the core


def core_layouts(view: View) -> tuple[list, list[int], list[int], list[int]]:
    """(layouts, date_layout, date_times, date_time_offsets) for AnemoiOptions: each part's
    stored variables become one contiguous range read [min, max + 1) (a date's variables share
    a chunk, so the extra rows cost no reads), and each variable a row in the parts' ranges."""
    layouts = []
    used_parts: list[list[int]] = []
    for parts, placement in view.structures:
        needed: dict[int, list[int]] = {}
        for p, q in placement:
            needed.setdefault(p, []).append(parts[p][1][q])
        order = sorted(needed)
        reads, row_base = [], {}
        rows_so_far = 0
        for p in order:
            lo, hi = min(needed[p]), max(needed[p]) + 1
            reads.append((int(parts[p][0]), lo, hi))
            row_base[p] = rows_so_far - lo
            rows_so_far += hi - lo
        rows = [row_base[p] + parts[p][1][q] for p, q in placement]
        layouts.append((reads, rows))
        used_parts.append(order)
    date_layout = view.date_structure.astype(np.int64).tolist()
    date_times: list[int] = []
    offsets = [0]
    for k, s in enumerate(date_layout):
        times = view.date_times[k]
        date_times += [int(times[p]) for p in used_parts[s]]
        offsets.append(len(date_times))
    return layouts, date_layout, date_times, offsets


def usable_indices(
    missing: set[int], length: int, rollout: int, multistep: int, timeincrement: int
) -> np.ndarray:
    """anemoi-training's get_usable_indices: reference dates whose whole window [i - (multistep
    - 1)·timeincrement, i + rollout·timeincrement] lies inside the dates and holds no missing date."""
    before = (multistep - 1) * timeincrement
    after = rollout * timeincrement
    usable = np.arange(length)
    for i in set(missing) | {-1, length}:
        usable = usable[(usable < i - after) | (usable > i + before)]
    return usable
