"""JAX adapter: chute batches as jax.Array without a host copy where the backend allows.

    >>> import chute, chute.jax
    >>> loader = chute.Loader({"inputs": "train/inputs.zarr", "targets": "train/targets.zarr"},
    ...                       batch_size=16, seed=0)
    >>> for batch in chute.jax.batches(loader):      # dict of jax.Array
    ...     params, loss = train_step(params, batch["inputs"], batch["targets"])

On CPU, `jax.numpy.from_dlpack` shares the batch buffer; with `device=` given, arrays are put on
that device (`jax.device_put`), which is where a GPU run copies host to device.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from .loader import Loader

__all__ = ["batches", "to_jax"]


def to_jax(batch: Mapping[str, Any], device: Any = None) -> dict[str, jax.Array]:
    """The batch's arrays as jax.Array: zero-copy on CPU via DLPack, else device_put."""
    if device is None:
        return {name: jnp.from_dlpack(array) for name, array in batch.items()}
    return {name: jax.device_put(array, device) for name, array in batch.items()}


def batches(loader: Loader, device: Any = None) -> Iterator[dict[str, jax.Array]]:
    """One epoch of `loader` as dicts of jax.Array."""
    for batch in loader:
        yield to_jax(batch, device)
