"""JAX adapter: chute batches as jax.Array without a host copy where the backend allows.

    >>> import chute, chute.jax
    >>> loader = chute.Loader({"inputs": "data/packed/inputs", "targets": "data/packed/targets"},
    ...                       batch_size=16, seed=0)
    >>> for batch in chute.jax.batches(loader):      # dict of jax.Array + "indices"
    ...     params, loss = train_step(params, batch["inputs"], batch["targets"])
    >>> state = loader.state_dict()                  # resume mid-epoch: loader.load_state_dict

With `chute.Loader(..., device=jax.devices("gpu")[0])` (or "cuda:0") the batches are delivered on
that GPU by chute's own stream and `jax.numpy.from_dlpack` takes them without a copy (JAX's stream
waits for chute's copy); see docs/gpu.md. On CPU, `jax.numpy.from_dlpack` shares the batch buffer, typed as the loader made it (bfloat16
and float16 included); with `device=` given, arrays are put on that device (`jax.device_put`),
which is where a GPU run copies host to device. `batch["indices"]` is the batch's sample numbers
as a NumPy int64 array (JAX would narrow them to int32 unless x64 is enabled). `batches()` runs
the loader's next epoch, so `loader.state_dict()` / `loader.load_state_dict()` save and resume
it exactly as for the loader itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from .loader import Loader

__all__ = ["batches", "to_jax"]


def _exporter(batch: Mapping[str, Any], name: str) -> Any:
    export = getattr(batch, "dlpack", None)
    return export(name) if export is not None else batch[name]


def to_jax(batch: Mapping[str, Any], device: Any = None) -> dict[str, Any]:
    """The batch's arrays as jax.Array (zero-copy on CPU via DLPack, else device_put), plus
    "indices" (NumPy int64) and "padding" (how many of the last samples repeat earlier ones to
    fill the batch, with drop_last=False) when the batch has them."""
    if device is None:
        out: dict[str, Any] = {name: jnp.from_dlpack(_exporter(batch, name)) for name in batch}
    else:
        out = {name: jax.device_put(jnp.from_dlpack(_exporter(batch, name)), device)
               for name in batch}  # fmt: skip
    indices = getattr(batch, "indices", None)
    if indices is not None:
        out["indices"] = indices
        out["padding"] = int(getattr(batch, "padding", 0))
    return out


def batches(loader: Loader, device: Any = None) -> Iterator[dict[str, Any]]:
    """The loader's next epoch (or the restored position) as dicts of jax.Array + "indices"."""
    from ._options import invalid

    # Checked at the call, not at the first batch (the Loader checked its own options).
    if not isinstance(loader, Loader):
        raise invalid(f"loader must be a chute.Loader, got {type(loader).__name__}")
    if device is not None and not isinstance(device, (jax.Device, jax.sharding.Sharding)):
        raise invalid(
            f"device must be None, a jax.Device or a jax.sharding.Sharding, got {device!r}"
        )
    return _batches(loader, device)


def _batches(loader: Loader, device: Any) -> Iterator[dict[str, Any]]:
    for batch in loader:
        yield to_jax(batch, device)
