"""PyTorch adapter: a `torch.utils.data.IterableDataset` over a chute Loader.

    >>> from chute.torch import ChuteIterableDataset
    >>> ds = ChuteIterableDataset({"inputs": "data/packed/inputs", "targets": "data/packed/targets"},
    ...                           batch_size=16, shuffle=True, seed=0)
    >>> loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    >>> for epoch in range(2):
    ...     ds.set_epoch(epoch)
    ...     for batch in loader:      # dict of torch.Tensor (CPU, zero-copy) + "indices"
    ...         x = batch["inputs"]
    >>> state = ds.state_dict()       # save with the checkpoint; load_state_dict() resumes there

chute batches already come assembled by chute's own threads, so use `batch_size=None` and
`num_workers=0`: worker processes would only add copies. Rank and world size come from
`torch.distributed` when it is initialised, else from the environment (see chute.Loader).
Tensors share the batch buffer through DLPack with the loader's own dtype (bfloat16 and float16
included). `device="cuda:0"` (a chute.Loader option, so also ChuteIterableDataset's) delivers
batches on that GPU: the tensors are CUDA tensors, ready on the current stream (chute's copy, on
its own stream, is ordered before it with an event). `pin_memory=True` gives page-locked CPU
tensors for `.to("cuda", non_blocking=True)`. See docs/gpu.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.utils.data

from . import _chute
from .loader import Dataset, Loader, _loader_options

__all__ = ["ChuteIterableDataset", "to_torch"]


def _exporter(batch: Mapping[str, Any], name: str) -> Any:
    """What to hand to DLPack: the batch's typed export when it has one (bfloat16 cannot go
    through NumPy), else the array itself."""
    export = getattr(batch, "dlpack", None)
    return export(name) if export is not None else batch[name]


def to_torch(batch: Mapping[str, Any]) -> dict[str, Any]:
    """The batch's arrays as tensors sharing their memory (via DLPack; CUDA tensors on the current
    stream for a loader with `device=`), plus "indices" (the
    sample numbers) and "padding" (how many of the last samples repeat earlier ones to fill the
    batch, with drop_last=False: leave them out of validation sums)."""
    out: dict[str, Any] = {name: torch.from_dlpack(_exporter(batch, name)) for name in batch}
    out["indices"] = torch.from_numpy(batch.indices)
    out["padding"] = int(getattr(batch, "padding", 0))
    return out


def _torch_rank_world() -> tuple[int | None, int | None]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None, None


class ChuteIterableDataset(torch.utils.data.IterableDataset):
    """Yields whole batches (dicts of tensors, see to_torch) of a chute Loader; one pass is one
    epoch. With `keys=("inputs", "targets")` it yields tuples of those entries instead, in that
    order, for loops that unpack `for x, y in loader`.

    `state_dict()` is the position after the last batch yielded ({"seed", "epoch",
    "next_batch"}, as chute.Loader gives it); `load_state_dict(state)` makes the next pass resume
    exactly there. A state taken after an epoch's last batch resumes at the next epoch's start.
    """

    def __init__(
        self,
        data: Mapping[str, str] | Dataset,
        keys: Sequence[str] | None = None,
        **loader_options: Any,
    ) -> None:
        super().__init__()
        from ._options import non_empty, texts

        self._keys = None if keys is None else tuple(non_empty("keys", texts("keys", keys)))
        import inspect

        from ._options import invalid

        try:  # option names and values now; only rank/world_size wait for the first len()/pass
            bound = inspect.signature(Loader).bind(data, **loader_options)
        except TypeError as error:
            raise invalid(f"ChuteIterableDataset: {error} (options are chute.Loader's)") from None
        bound.apply_defaults()
        _loader_options(data, bound.arguments)
        self._data = data
        self._options = dict(loader_options)
        self._epoch = 0  # the epoch the next pass runs
        self._start_batch = 0  # and the batch it starts from (after load_state_dict)
        self._running: int | None = None  # the epoch of a pass begun and not finished
        self._loader: Loader | None = None

    def set_epoch(self, epoch: int) -> None:
        """Like DistributedSampler.set_epoch: the next pass runs `epoch` from its start."""
        from ._options import INT64_MAX, integer

        self._epoch = integer("epoch", epoch, 0, INT64_MAX)
        self._start_batch = 0
        self._running = None

    def _get_loader(self) -> Loader:
        if self._loader is None:
            options = dict(self._options)
            rank, world = _torch_rank_world()
            if rank is not None:
                options.setdefault("rank", rank)
                options.setdefault("world_size", world)
            self._loader = Loader(self._data, **options)
        return self._loader

    def __len__(self) -> int:
        return len(self._get_loader())

    def state_dict(self) -> dict[str, int]:
        """{"seed", "epoch", "next_batch"}: where the next pass starts (or the running one is),
        with the loader's "batch_size", "world_size" and "dataset" fingerprint."""
        if self._running is not None:
            return self._get_loader().state_dict()
        # The loader's state carries what it was taken from (batch size, world size, dataset);
        # the position is this adapter's own until a pass runs.
        state = dict(self._get_loader().state_dict())
        state.update(epoch=self._epoch, next_batch=self._start_batch)
        return state

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Makes the next pass resume exactly at `state` (from state_dict() or Loader)."""
        from ._options import INT64_MAX, UINT64_MAX, integer, invalid

        if not isinstance(state, Mapping) or not {"seed", "epoch", "next_batch"} <= set(state):
            raise invalid(f"state must be a dict from state_dict(), got {state!r}")
        seed = integer("state['seed']", state["seed"], 0, UINT64_MAX)
        epoch = integer("state['epoch']", state["epoch"], 0, INT64_MAX)
        batch = integer("state['next_batch']", state["next_batch"], 0, INT64_MAX)
        loader = self._get_loader()
        if seed != loader.state_dict()["seed"]:
            raise _chute.InvalidArgumentError(
                f"saved state has seed {seed}, this dataset's loader seed "
                f"{loader.state_dict()['seed']}"
            )
        current = loader.state_dict()
        for key in ("batch_size", "world_size", "dataset"):
            if key in state and int(state[key]) != current[key]:
                raise _chute.InvalidArgumentError(
                    f"saved state has {key} {state[key]}, this dataset's loader {current[key]}"
                )
        if not 0 <= batch <= len(loader):
            raise _chute.InvalidArgumentError(
                f"saved state's next batch {batch} outside [0, {len(loader)}]"
            )
        if batch == len(loader):  # taken after an epoch's last batch: the next epoch
            epoch, batch = epoch + 1, 0
        self._epoch, self._start_batch, self._running = epoch, batch, None

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise RuntimeError(
                "ChuteIterableDataset reads with chute's own threads: use DataLoader(..., "
                "batch_size=None, num_workers=0)"
            )
        loader = self._get_loader()
        epoch, start = self._epoch, self._start_batch
        self._epoch, self._start_batch, self._running = epoch + 1, 0, epoch
        for batch in loader.epoch(epoch, start):
            out = to_torch(batch)
            if self._keys is None:
                yield out
                continue
            missing = [key for key in self._keys if key not in out]
            if missing:
                raise _chute.InvalidArgumentError(
                    f"keys {missing} are not in the batch; it has {list(out)}"
                )
            yield tuple(out[key] for key in self._keys)
        if self._running == epoch:
            self._running = None
