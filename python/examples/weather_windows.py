"""Windows over the time axis of a weather store, normalised with `chute stats` statistics."""

from __future__ import annotations

import sys

import chute


def main(store: str, statistics: str) -> None:
    dataset = chute.windows(
        store,
        ["temperature", "2m_temperature"],
        levels=[500.0, 850.0],
        input_offsets=(-1, 0),
        target_offsets=(1,),
        statistics=statistics,
        dtype="bfloat16",
    )
    print(dataset.channel_names("inputs"))
    with chute.Loader(dataset, batch_size=8, threads=None, timeout=60.0) as loader:
        for batch in loader:
            print(batch.epoch, batch.index, batch["inputs"].shape)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
