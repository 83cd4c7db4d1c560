#!/usr/bin/env python3
"""Reads through an HDF5 virtual dataset against reading its source files directly.

Writes per-year FourCastNet-like files (`fields[T, C, H, W]` float32, contiguous or chunked with
gzip) and a `.h5v` virtual dataset stacking them along time (h5py, libver "latest"), then times,
best of --repeat, in one process:
  - boxes: --boxes random (1, C, H, W) samples read through the virtual dataset
    (chute.open("all.h5v/fields")) against the same samples read from each year's file
    (chute.open("<year>.h5/fields"));
  - windows: one epoch of chute.windows + Loader batches (history 2, one target step) over the
    virtual dataset against the same windows over the per-year list (file_pattern).
The page cache is warm (every file is read once first): this measures chute's work per read,
not the disk. The two sides run alternately, --repeat times each, and the best time of each
is reported, so that other load on the machine reaches both alike. With fewer than 1460 steps
per file the per-year list has gaps between years (its windows never cross them), so the two
epochs differ by a few windows: compare the rates.

usage: bench_hdf5_vds.py OUTDIR [--years 4] [--steps 120] [--layout contiguous|gzip]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import h5py
import numpy as np

import chute

C, H, W = 8, 121, 240


def _fields(f, data: np.ndarray, layout: str) -> None:
    """`fields` as FourCastNet writes it: contiguous, or one gzip chunk a step."""
    if layout == "gzip":
        f.create_dataset("fields", data=data, chunks=(1, C, H, W), compression="gzip",
                         compression_opts=1)  # fmt: skip
    else:
        f.create_dataset("fields", data=data)


def _read_fields(path: str) -> np.ndarray:
    with h5py.File(path, "r") as f:
        return f["fields"][()]


def write(outdir: Path, years: int, steps: int, layout: str) -> tuple[list[str], str]:
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    rng = np.random.default_rng(0)
    for i in range(years):
        path = outdir / f"{2001 + i}.h5"
        paths.append(str(path))
        if path.exists():
            continue
        data = rng.standard_normal((steps, C, H, W)).astype("f4")
        with h5py.File(path, "w") as f:
            _fields(f, data, layout)
    one = outdir / "one" / "2001.h5"  # the same data as one file, for the windows
    if not one.exists():
        one.parent.mkdir(exist_ok=True)
        with h5py.File(one, "w") as f:
            _fields(f, np.concatenate([_read_fields(p) for p in paths]), layout)
    vds = outdir / "2001.h5v"
    layout_v = h5py.VirtualLayout((years * steps, C, H, W), "f4")
    for i, p in enumerate(paths):
        layout_v[i * steps : (i + 1) * steps] = h5py.VirtualSource(
            Path(p).name, "fields", shape=(steps, C, H, W)
        )
    with h5py.File(vds, "w", libver="latest") as f:
        f.create_virtual_dataset("fields", layout_v, fillvalue=0)
    return paths, str(vds)


def best_of_interleaved(fns, repeat: int) -> tuple[list[float], list[float]]:
    """Best wall and CPU (all threads) times of each of `fns`, run in turn so that load on the
    machine hits all alike."""
    wall = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[i].append(time.perf_counter() - t)
            cpu[i].append(time.process_time() - c)
    return [min(t) for t in wall], [min(t) for t in cpu]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--years", type=int, default=4)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--layout", choices=["contiguous", "gzip"], default="contiguous")
    ap.add_argument("--boxes", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    paths, vds = write(args.outdir, args.years, args.steps, args.layout)
    total = args.years * args.steps
    rng = np.random.default_rng(1)
    picks = rng.integers(0, total, args.boxes)

    virtual = chute.open(f"{vds}/fields")
    members = [chute.open(f"{p}/fields") for p in paths]
    for m in members:
        m[...]  # warm the page cache
    out = np.empty((1, C, H, W), "f4")
    assert np.array_equal(virtual[5:6], members[0][5:6])

    def boxes_virtual():
        for t in picks:
            out[...] = virtual[int(t) : int(t) + 1]

    def boxes_direct():
        for t in picks:
            y, s = divmod(int(t), args.steps)
            out[...] = members[y][s : s + 1]

    kw = {
        "input_offsets": (-1, 0),
        "target_offsets": (1,),
        "channels": [f"c{i}" for i in range(C)],
        "file_step": "6h",
        "channels_last": False,
    }
    use = ["c0", "c3", "c5"]
    over_vds = chute.windows(vds, use, file_pattern="{year}.h5v", **kw)
    over_list = chute.windows(paths, use, file_pattern="{year}.h5", allow_gaps=True, **kw)
    over_one = chute.windows(str(args.outdir / "one" / "2001.h5"), use, file_pattern="{year}.h5",
                             **kw)  # fmt: skip

    def epoch(data):
        def run():
            for _ in chute.Loader(data, batch_size=args.batch, shuffle=False):
                pass

        return run

    boxes, boxes_cpu = best_of_interleaved([boxes_virtual, boxes_direct], args.repeat)
    sets = (over_vds, over_list, over_one)
    windows, windows_cpu = best_of_interleaved([epoch(d) for d in sets], args.repeat)
    print(f"{args.years} files x {args.steps} steps of ({C}, {H}, {W}) float32, {args.layout}")
    print("| read | virtual dataset | source files | one file | virtual / source files (CPU) |")
    print("|---|---|---|---|---|")
    n = args.boxes
    print(
        f"| {n} boxes (1, C, H, W), per s | {n / boxes[0]:.0f} | {n / boxes[1]:.0f} | | "
        f"{boxes[1] / boxes[0]:.2f} ({boxes_cpu[1] / boxes_cpu[0]:.2f}) |"
    )
    rates = [len(d) / t for d, t in zip(sets, windows)]
    cpu = [len(d) / t for d, t in zip(sets, windows_cpu)]
    print(
        f"| windows, samples per s | {rates[0]:.0f} | {rates[1]:.0f} | {rates[2]:.0f} | "
        f"{rates[0] / rates[1]:.2f} ({cpu[0] / cpu[1]:.2f}) |"
    )


if __name__ == "__main__":
    main()
