"""Random rotated crops of two volumes at the same position, in a PyTorch training loop."""

from __future__ import annotations

import sys

import chute


def main(volumes: str) -> None:
    dataset = chute.crops(
        {"inputs": f"{volumes}/Nbody", "targets": f"{volumes}/Hydro"},
        size=64,
        channel_axis=0,
        crops_per_epoch=256,
        transforms="rotations",
    )
    loader = chute.Loader(dataset, batch_size=4, shuffle=True, seed=1, drop_last=True)
    for batch in loader:
        print(batch.crops.shape, batch.transforms.tolist(), batch["inputs"].shape)


if __name__ == "__main__":
    main(sys.argv[1])
