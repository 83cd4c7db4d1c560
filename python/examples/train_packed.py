"""Training batches from arrays that share the sample axis, with a checkpointed position."""

from __future__ import annotations

import sys

import numpy as np

import chute


def main(inputs: str, targets: str) -> None:
    loader = chute.Loader(
        {"inputs": inputs, "targets": targets}, batch_size=16, shuffle=True, seed=0, prefetch=2
    )
    for epoch in range(2):
        for batch in loader:
            x: np.ndarray = batch["inputs"]
            y: np.ndarray = batch["targets"]
            print(epoch, batch.index, x.shape, y.shape, batch.padding)
        state: dict[str, int] = loader.state_dict()
        loader.load_state_dict(state)
    loader.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
