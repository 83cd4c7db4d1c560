"""PyTorch adapter: a `torch.utils.data.IterableDataset` over a chute Loader.

    >>> from chute.torch import ChuteIterableDataset
    >>> ds = ChuteIterableDataset({"inputs": "train/inputs.zarr", "targets": "train/targets.zarr"},
    ...                           batch_size=16, shuffle=True, seed=0)
    >>> loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    >>> for epoch in range(epochs):
    ...     ds.set_epoch(epoch)
    ...     for batch in loader:      # dict of torch.Tensor (CPU, zero-copy) + "indices"
    ...         x = batch["inputs"].to("cuda", non_blocking=True)

chute batches already come assembled by chute's own threads, so use `batch_size=None` and
`num_workers=0`: worker processes would only add copies. Rank and world size come from
`torch.distributed` when it is initialised, else from the environment (see chute.Loader).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.utils.data

from .loader import Dataset, Loader

__all__ = ["ChuteIterableDataset", "to_torch"]


def to_torch(batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The batch's arrays as CPU tensors sharing their memory (via DLPack), plus "indices"."""
    out = {name: torch.from_dlpack(array) for name, array in batch.items()}
    out["indices"] = torch.from_numpy(batch.indices)
    return out


def _torch_rank_world() -> tuple[int | None, int | None]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None, None


class ChuteIterableDataset(torch.utils.data.IterableDataset):
    """Yields whole batches (dicts of tensors) of a chute Loader; one pass is one epoch."""

    def __init__(self, data: Mapping[str, str] | Dataset, **loader_options: Any) -> None:
        super().__init__()
        self._data = data
        self._options = dict(loader_options)
        self._epoch = 0
        self._loader: Loader | None = None

    def set_epoch(self, epoch: int) -> None:
        """Like DistributedSampler.set_epoch: the next pass runs `epoch`."""
        self._epoch = int(epoch)

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

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise RuntimeError(
                "ChuteIterableDataset reads with chute's own threads: use DataLoader(..., "
                "batch_size=None, num_workers=0)"
            )
        loader = self._get_loader()
        epoch = self._epoch
        self._epoch += 1
        for batch in loader.epoch(epoch):
            yield to_torch(batch)
