"""chute.anemoi(): anemoi datasets (anemoi-datasets, ufs2arco) served as anemoi-training cuts
them. The view (selection, dates, concat, join) is resolved in _anemoi_view.py; the samples are
read and placed by the C++ AnemoiDataset."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import _anemoi_view as V
from . import _chute, _pickling
from . import _options as check
from .loader import Dataset

__all__ = ["AnemoiDataset", "anemoi"]

NORMALISERS = ("mean-std", "std", "min-max", "max", "none")


class AnemoiDataset(Dataset):
    """An anemoi dataset for chute.Loader (made by chute.anemoi()).

    Batches hold "inputs" (batch, multistep_input, ensemble, cells, input variables) and
    "targets" (batch, rollout, ensemble, cells, target variables), or with variables_first
    (batch, steps, variables, ensemble, cells)."""

    def __init__(self, core: Any, view: V.View, **info: Any) -> None:
        super().__init__(core)
        self._view = view
        self._info = info

    @property
    def variables(self) -> list[str]:
        """The variables of the view (after select/drop/join), in order."""
        return list(self._view.variables)

    @property
    def name_to_index(self) -> dict[str, int]:
        return self._view.name_to_index

    @property
    def input_variables(self) -> list[str]:
        return list(self._info["input_variables"])

    @property
    def target_variables(self) -> list[str]:
        return list(self._info["target_variables"])

    @property
    def dates(self) -> np.ndarray:
        """Every date of the view (datetime64[s]), missing ones included."""
        return self._view.dates.copy()

    @property
    def missing_dates(self) -> np.ndarray:
        return np.sort(self._view.dates[sorted(self._view.missing)])

    @property
    def missing(self) -> set[int]:
        """Positions of the missing dates in `dates`."""
        return set(self._view.missing)

    @property
    def frequency(self) -> np.timedelta64:
        return self._view.frequency

    @property
    def start_date(self) -> np.datetime64:
        return self._view.dates[0]

    @property
    def end_date(self) -> np.datetime64:
        return self._view.dates[-1]

    @property
    def latitudes(self) -> np.ndarray:
        """Of every stored cell (a reader group reads `cell_range` of them)."""
        return self._view.latitudes.copy()

    @property
    def longitudes(self) -> np.ndarray:
        return self._view.longitudes.copy()

    @property
    def cell_range(self) -> tuple[int, int]:
        """The cells [begin, end) this dataset reads (all of them outside reader groups)."""
        return self._info["cell_range"]

    @property
    def statistics(self) -> dict[str, np.ndarray]:
        """mean, stdev, minimum, maximum per variable of the view (as anemoi-datasets gives)."""
        return {k: v.copy() for k, v in self._view.statistics.items()}

    @property
    def resolution(self) -> Any:
        return self._view.resolution

    @property
    def attrs(self) -> dict:
        """The attributes of the (first) store."""
        return dict(self._view.attrs)

    @property
    def ensemble_members(self) -> list[int]:
        return list(self._info["members"])

    @property
    def reference_dates(self) -> np.ndarray:
        """The date of each sample (the last input step), datetime64[s]."""
        return self._view.dates[self._info["sample_dates"]]

    def sample_date_indices(self) -> np.ndarray:
        """Position in `dates` of each sample's reference date (anemoi-training's index i)."""
        return np.asarray(self._info["sample_dates"], dtype=np.int64)

    @property
    def normalisation(self) -> dict[str, tuple[float, float]]:
        """variable -> (mul, add): the stored value x becomes x × mul + add (float32)."""
        mul, add = self._info["mul"], self._info["add"]
        if not mul:
            return {name: (1.0, 0.0) for name in self._view.variables}
        return {name: (mul[i], add[i]) for i, name in enumerate(self._view.variables)}


def _resolve(spec: Any, cache: Any, cache_size: Any, what: str) -> V.View:
    """A path or URL, a list (concatenated), or a dict as open_dataset takes it: {"dataset":
    spec, "select": ..., "start": ...}, {"concat": [...]}, {"join": [...]}."""
    if isinstance(spec, (str, bytes, os.PathLike)):
        return V.open_store(spec, cache, cache_size)
    if isinstance(spec, Mapping):
        options = dict(spec)
        if "concat" in options:
            items = options.pop("concat")
            view = V.concat([_resolve(s, cache, cache_size, what) for s in _list(items, "concat")])
        elif "join" in options:
            items = options.pop("join")
            view = V.join([_resolve(s, cache, cache_size, what) for s in _list(items, "join")])
        elif "dataset" in options:
            view = _resolve(options.pop("dataset"), cache, cache_size, what)
        else:
            raise _chute.InvalidArgumentError(
                f"{what}: a dict needs 'dataset', 'concat' or 'join', got {sorted(options)}"
            )
        return _subset(view, **options)
    if isinstance(spec, Sequence):
        return V.concat([_resolve(s, cache, cache_size, what) for s in _list(spec, "concat")])
    raise _chute.InvalidArgumentError(
        f"{what} must be a path, a URL, a list or a dict, got {type(spec).__name__}"
    )


def _list(items: Any, what: str) -> list:
    if isinstance(items, (str, bytes, os.PathLike)) or not isinstance(items, Sequence):
        raise _chute.InvalidArgumentError(f"{what} takes a list of datasets, got {items!r}")
    if not items:
        raise _chute.InvalidArgumentError(f"{what} takes a non-empty list of datasets")
    return list(items)


def _subset(
    view: V.View,
    *,
    select: Any = None,
    drop: Any = None,
    start: Any = None,
    end: Any = None,
    frequency: Any = None,
    members: Any = None,
    numbers: Any = None,
    **unknown: Any,
) -> V.View:
    """open_dataset's order: select/drop, then start/end, then frequency, then members."""
    if unknown:
        raise _chute.InvalidArgumentError(
            f"unknown dataset option(s) {sorted(unknown)}: chute.anemoi takes select, drop, "
            "start, end, frequency, members, numbers, concat, join"
        )
    if select is not None and drop is not None:
        raise _chute.InvalidArgumentError("give select or drop, not both")
    if select is not None:
        names = [select] if isinstance(select, str) else check.texts("select", select)
        view = V.select(view, names, "select")
    if drop is not None:
        names = [drop] if isinstance(drop, str) else check.texts("drop", drop)
        view = V.drop(view, names)
    if start is not None or end is not None:
        view = V.start_end(view, start, end)
    if frequency is not None:
        view = V.with_frequency(view, frequency)
    if members is not None and numbers is not None:
        raise _chute.InvalidArgumentError("give members (from 0) or numbers (from 1), not both")
    if members is not None:
        view = V.members(view, check.integers("members", members))
    if numbers is not None:
        view = V.members(view, check.integers("numbers", numbers), 1)
    return view


def _normalisation(view: V.View, normalise: Any) -> tuple[list[float], list[float], dict[str, str]]:
    """(mul, add) per variable, as anemoi-training's InputNormalizer computes them (float64
    statistics, float32 factors), and the method of each variable."""
    if normalise is None:
        normalise = "none"
    methods: dict[str, str] = {}
    if isinstance(normalise, str):
        default, per_variable = normalise, {}
    elif isinstance(normalise, Mapping):
        per_variable = {}
        default = normalise.get("default", "mean-std")
        for key, value in normalise.items():
            if key == "default":
                continue
            if key in NORMALISERS and isinstance(value, (list, tuple)):  # anemoi's config form
                for name in value:
                    per_variable[str(name)] = key
            else:
                per_variable[str(key)] = value
    else:
        raise _chute.InvalidArgumentError(
            f"normalise must be one of {NORMALISERS}, a dict or None, got {normalise!r}"
        )
    for name, method in [("default", default), *per_variable.items()]:
        if method not in NORMALISERS:
            raise _chute.InvalidArgumentError(
                f"normalise: {name!r} has method {method!r}, expected one of {NORMALISERS}"
            )
    unknown = [n for n in per_variable if n not in view.name_to_index]
    if unknown:
        raise _chute.InvalidArgumentError(
            f"normalise names {unknown}, which are not variables of the dataset"
        )
    for name in view.variables:
        methods[name] = per_variable.get(name, default)
    if all(m == "none" for m in methods.values()):
        return [], [], methods
    stats = view.statistics
    mul = np.ones(len(view.variables), np.float32)
    add = np.zeros(len(view.variables), np.float32)
    needs = {"mean-std": ("mean", "stdev"), "std": ("stdev",), "min-max": ("minimum", "maximum"),
             "max": ("maximum",), "none": ()}  # fmt: skip
    for i, name in enumerate(view.variables):
        method = methods[name]
        for stat in needs[method]:
            if stat not in stats:
                raise _chute.InvalidMetadataError(
                    f"anemoi dataset {view.name!r}: array {stat!r} is missing, which "
                    f"normalise={method!r} of variable {name!r} needs"
                )
        if method == "mean-std":
            mul[i] = 1 / stats["stdev"][i]
            add[i] = -stats["mean"][i] / stats["stdev"][i]
        elif method == "std":
            mul[i] = 1 / stats["stdev"][i]
        elif method == "min-max":
            x = stats["maximum"][i] - stats["minimum"][i]
            mul[i] = 1 / x
            add[i] = -stats["minimum"][i] / x
        elif method == "max":
            mul[i] = 1 / stats["maximum"][i]
        if not (np.isfinite(mul[i]) and np.isfinite(add[i])):
            raise _chute.InvalidMetadataError(
                f"anemoi dataset {view.name!r}: the statistics of variable {name!r} give no "
                f"finite {method} normalisation (mean, stdev, minimum, maximum = "
                f"{[float(stats[s][i]) for s in V.STATISTICS if s in stats]})"
            )
    return mul.tolist(), add.tolist(), methods


def _variables(view: V.View, explicit: Any, excluded: Sequence[str], what: str) -> list[str]:
    if explicit is not None:
        names = check.texts(what, explicit)
        unknown = [n for n in names if n not in view.name_to_index]
        if unknown:
            raise _chute.InvalidArgumentError(
                f"{what}: {unknown} not among the variables {view.variables}"
            )
        return names
    return [n for n in view.variables if n not in set(excluded)]


@_pickling.remembered
def anemoi(
    path: Any = None,
    *,
    select: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    start: Any = None,
    end: Any = None,
    frequency: Any = None,
    concat: Sequence[Any] | None = None,
    join: Sequence[Any] | None = None,
    members: Sequence[int] | None = None,
    numbers: Sequence[int] | None = None,
    multistep_input: int = 2,
    rollout: int = 1,
    timeincrement: int | str = 1,
    forcing: Sequence[str] = (),
    diagnostic: Sequence[str] = (),
    input_variables: Sequence[str] | None = None,
    target_variables: Sequence[str] | None = None,
    normalise: Any = "mean-std",
    dtype: str = "float32",
    variables_first: bool = False,
    reader_group: tuple[int, int] | None = None,
    cache: str | os.PathLike | None = None,
    cache_size: int | None = None,
) -> AnemoiDataset:
    """An anemoi dataset (anemoi-datasets, ufs2arco; Zarr v2 or v3, local or a URL) for
    chute.Loader, cut into samples as anemoi-training does.

    The dataset, as anemoi-datasets' ``open_dataset`` takes it: `path` (a store, a list of
    stores to concatenate, or a dict such as ``{"join": [a, b]}`` / ``{"dataset": a, "start":
    2020}``), or `concat=[...]` (along time) / `join=[...]` (variables side by side, same dates);
    then `select` (the variables in the order given) or `drop`, `start`/`end` (dates,
    inclusive; a year or month stands for all of it), `frequency` (a multiple of the stored
    one, e.g. "12h"), `members` (ensemble members from 0; `numbers` from 1; sorted, default all).

    Samples, as anemoi-training cuts them: reference date i (a position in `dates`) gives the
    inputs at i - (multistep_input - 1)·timeincrement, ..., i and the targets at i +
    timeincrement, ..., i + rollout·timeincrement (`timeincrement` in dates, or a timedelta such
    as "6h"); a reference date whose window [first input, last target] holds a missing date is
    never sampled. `rollout=0`: inputs only.

    Variables: inputs are every variable but the `diagnostic` ones, targets every variable but
    the `forcing` ones (anemoi-training's prognostic/forcing/diagnostic), both in dataset order;
    or `input_variables` / `target_variables` by name, in the order given.

    batch["inputs"] is (batch, multistep_input, ensemble, cells, input variables),
    batch["targets"] (batch, rollout, ensemble, cells, target variables); `variables_first=True`
    gives (batch, steps, variables, ensemble, cells). `normalise`: "mean-std" (default), "std",
    "min-max", "max", "none", or a dict with a "default" and per-variable methods
    (``{"default": "mean-std", "lsm": "none"}``; anemoi's ``{"none": ["lsm"]}`` form too), from the
    dataset's own statistics: x × mul + add with anemoi-training's float32 factors. `dtype`:
    float32, float16 or bfloat16.

    `reader_group=(i, n)`: this rank reads the i-th of n equal slices of the cells of every
    sample (anemoi-training's reader groups: the n ranks of one model instance read their own
    part once); give the Loader rank=model instance, world_size=instances so that the ranks of
    a group get the same samples; chute.distributed.reader_group() derives (i, n) and the
    Loader's options from the launcher's environment, and splits the batch instead when asked.
    `cache`/`cache_size`: a node-local chunk cache (chute.open).
    """
    what = "chute.anemoi"
    sources = [x for x in (path, concat, join) if x is not None]
    if len(sources) != 1:
        raise _chute.InvalidArgumentError(f"{what} takes one of path, concat=, join=")
    spec = (
        path if path is not None else ({"concat": concat} if concat is not None else {"join": join})
    )
    multistep_input = check.integer("multistep_input", multistep_input, 1, 1 << 20)
    rollout = check.integer("rollout", rollout, 0, 1 << 20)
    dtype = check.choice("dtype", dtype, ("float32", "float16", "bfloat16"))
    variables_first = check.flag("variables_first", variables_first)
    forcing = check.texts("forcing", forcing)
    diagnostic = check.texts("diagnostic", diagnostic)
    if reader_group is not None:
        group = check.integers("reader_group", reader_group, 0)
        if len(group) != 2 or group[1] < 1 or group[0] >= group[1]:
            raise check.invalid(
                f"reader_group must be (i, n) with 0 <= i < n, got {reader_group!r}"
            )
        reader_group = (group[0], group[1])

    view = _resolve(spec, cache, cache_size, what)
    view = _subset(
        view,
        select=select,
        drop=drop,
        start=start,
        end=end,
        frequency=frequency,
        members=members,
        numbers=numbers,
    )
    if isinstance(timeincrement, (int, np.integer)) and not isinstance(timeincrement, bool):
        increment = check.integer("timeincrement", timeincrement, 1, 1 << 20)
    else:
        step = V.parse_frequency(timeincrement, "timeincrement")
        if step <= np.timedelta64(0, "s") or step % view.frequency != np.timedelta64(0, "s"):
            raise _chute.InvalidArgumentError(
                f"timeincrement {timeincrement!r} is not a positive multiple of the dataset's "
                f"frequency {V._hours(view.frequency)}"
            )
        increment = int(step // view.frequency)
    chosen_members = list(view.member_map)

    inputs = _variables(view, input_variables, diagnostic, "input_variables")
    targets = _variables(view, target_variables, forcing, "target_variables")
    for name in (*forcing, *diagnostic):
        if name not in view.name_to_index:
            raise _chute.InvalidArgumentError(
                f"forcing/diagnostic: {name!r} is not a variable of the dataset ({view.variables})"
            )
    if not inputs:
        raise _chute.InvalidArgumentError("no input variables are left")
    if rollout and not targets:
        raise _chute.InvalidArgumentError("no target variables are left")
    mul, add, methods = _normalisation(view, normalise)

    samples = V.usable_indices(view.missing, len(view.dates), rollout, multistep_input, increment)
    if len(samples) == 0:
        raise _chute.InvalidArgumentError(
            f"no sample fits: {len(view.dates)} dates ({len(view.missing)} missing) for windows "
            f"of {multistep_input} input and {rollout} target steps {increment} date(s) apart"
        )
    cells = view.cells
    cell_range = (0, cells)
    if reader_group is not None:
        i, n = reader_group
        if cells < n:
            raise _chute.InvalidArgumentError(f"reader_group: {cells} cells for {n} readers")
        cell_range = (i * cells // n, (i + 1) * cells // n)
    layouts, date_layout, date_times, offsets = V.core_layouts(view)
    index = view.name_to_index
    core = _chute._open_anemoi(
        view.sources,
        view.source_names,
        layouts,
        date_layout,
        date_times,
        offsets,
        len(view.variables),
        chosen_members,
        cell_range[0],
        cell_range[1],
        samples.tolist(),
        [-(multistep_input - 1 - s) * increment for s in range(multistep_input)],
        [(r + 1) * increment for r in range(rollout)],
        [index[n] for n in inputs],
        [index[n] for n in targets] if rollout else [],
        mul,
        add,
        variables_first,
        dtype,
    )
    return AnemoiDataset(
        core,
        view,
        input_variables=inputs,
        target_variables=targets if rollout else [],
        members=chosen_members,
        sample_dates=samples,
        cell_range=cell_range,
        mul=mul,
        add=add,
        methods=methods,
        timeincrement=increment,
    )
