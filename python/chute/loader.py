"""The Loader: deterministic, sharded, prefetched training batches.

    >>> loader = chute.Loader({"inputs": "train/inputs.zarr", "targets": "train/targets.zarr"},
    ...                       batch_size=16, shuffle=True, seed=0, drop_last=True,
    ...                       threads=None, prefetch=2, rank=0, world_size=1)
    >>> len(loader)                  # batches per epoch for this rank
    >>> for batch in loader:         # one epoch; the next `for` is the next epoch
    ...     batch["inputs"]          # numpy.ndarray, zero-copy, (16, lat, lon, channels)
    ...     batch.indices            # numpy int64 array: the sample numbers, in batch order

W3 random crops of volumes, rotated by the cube's symmetries while they are placed:

    >>> ds = chute.crops({"inputs": "train.h5/Nbody", "targets": "train.h5/Hydro"}, size=64,
    ...                  channel_axis=0, crops_per_epoch=4096, transforms="rotations")
    >>> loader = chute.Loader(ds, batch_size=64, shuffle=True, seed=0)
    >>> batch.crops, batch.transforms   # (64, 3) start corners, (64,) transform ids

W2 windows over a Zarr group in xarray layout:

    >>> ds = chute.windows("era5.zarr", variables=["temperature", "2m_temperature"],
    ...                    levels=[500, 850], input_offsets=(-1, 0), target_offsets=(1,))
    >>> loader = chute.Loader(ds, batch_size=16)   # batch["inputs"], batch["targets"]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _chute

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


class Dataset:
    """What a sample is: built by `packed()` (W1), `windows()` (W2) or `crops()` (W3)."""

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

    def __repr__(self) -> str:
        return f"chute.Dataset({self._core.describe()})"


def packed(arrays: Mapping[str, str]) -> Dataset:
    """W1: named arrays (local paths: an array folder or "group/member") sharing axis 0."""
    if not isinstance(arrays, Mapping) or not arrays:
        raise _chute.InvalidArgumentError("packed() needs a non-empty mapping of name -> path")
    return Dataset(_chute._open_packed([(str(k), str(v)) for k, v in arrays.items()]))


def windows(
    path: str,
    variables: Sequence[str],
    *,
    levels: Sequence[float] | None = None,
    level_indices: Sequence[int] | None = None,
    input_offsets: Sequence[int] = (-1, 0),
    target_offsets: Sequence[int] = (1,),
    channels_last: bool = True,
    dtype: str = "float32",
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    mean_suffix: str = "",
    std_suffix: str = "",
    level_coordinate: str = "level",
    time_range: tuple[int, int] | None = None,
) -> Dataset:
    """W2: windows over the time axis of a Zarr group in xarray layout.

    A sample is a time step t: "inputs" stacks `variables` at the chosen levels at t + each of
    `input_offsets`; "targets" the same at t + `target_offsets`. Channel order: for each offset,
    for each variable (in the order given), for each level (2-D variables give one channel).
    `levels` are values of the `level_coordinate` array, `level_indices` positions; neither means
    every level. Normalisation x = (x - mean[c]) / std[c] uses `mean`/`std` (one value per channel
    of one time step) or arrays named variable + `mean_suffix` / `std_suffix` in the group
    (a suffix with `{}` is a pattern: `"mean/{}"` names `mean/temperature`, the layout of
    `chute make-dataset variables`). `dtype`
    is float32, float16 or bfloat16. Windows that would cross the ends are never sampled.
    """
    start, stop = time_range if time_range is not None else (0, -1)
    return Dataset(
        _chute._open_windows(
            str(path),
            [str(v) for v in variables],
            [int(i) for i in (level_indices or [])],
            [float(v) for v in (levels or [])],
            [int(o) for o in input_offsets],
            [int(o) for o in target_offsets],
            bool(channels_last),
            str(dtype),
            [float(v) for v in (mean or [])],
            [float(v) for v in (std or [])],
            mean_suffix,
            std_suffix,
            level_coordinate,
            int(start),
            int(stop),
        )
    )


def crops(
    arrays: Mapping[str, Any],
    size: int | Sequence[int] = 64,
    *,
    channel_axis: int | None = 0,
    crops_per_epoch: int = 4096,
    transforms: str | None = None,
    channels_last: bool = False,
) -> Dataset:
    """W3: random boxes of `size` at the same position in every array of `arrays`.

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
    from ._array import Array, open

    if not isinstance(arrays, Mapping) or not arrays:
        raise _chute.InvalidArgumentError("crops() needs a non-empty mapping of name -> array")
    opened = []
    for name, array in arrays.items():
        opened.append((str(name), (array if isinstance(array, Array) else open(array))._core))
    sizes = [int(size)] if isinstance(size, (int, np.integer)) else [int(s) for s in size]
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


def _default_rank_world() -> tuple[int, int]:
    from .distributed import rank_and_world_size

    return rank_and_world_size()


class Loader:
    """Training batches from `data`: a mapping of name -> array path (W1), or a `Dataset`.

    `threads=None` uses one reader thread per CPU this process may run on (its affinity);
    `prefetch` batches are assembled ahead of the consumer. `rank`/`world_size` default to MPI (mpi4py, when initialised), then torchrun's
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
                {name: _as_numpy(array, dtype) for name, array, dtype, _ in arrays},
                {name: exported for name, _, _, exported in arrays},
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
