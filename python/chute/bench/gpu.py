"""`chute bench --device cuda:0`: the loader delivering batches to a GPU, measured with PyTorch.

    python -m chute.bench.gpu DATASET --device cuda:0 --threads 16 --batch-size 16 --json out.json

DATASET is a `chute make-dataset` folder: packed (inputs, targets) or volume (crops of
input and target). One run measures, on the same batch size:

- roofline: the host-to-device copy of one batch-sized buffer on one stream, from page-locked
  memory and from pageable memory (GB/s), and the delivery stage alone (chute's device pool,
  events and stream, over a batch already assembled);
- io: batches/s of chute on the host (the loader's own rate), of host batches copied with
  `.to(device)` from pageable memory (what users did before), of `pin_memory=True` batches
  copied with `non_blocking=True`, and of `device=` batches (chute's copy, on its stream);
- full: a real GPU step per batch (a chain of matrix products sized to the io mode's time per
  batch, reading the batch) with `device=` delivery: accelerator utilisation = the step's own
  time x batches / wall time;
- peer: the PyTorch DataLoader (zarr-python for packed samples, h5py for volumes; `threads` worker processes)
  with `pin_memory=True` and `non_blocking` copies, io and full.

Prints a table and (with --json) writes every number.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _gb(nbytes: float) -> float:
    return nbytes / 1e9


class _Workload:
    """The dataset as chute loaders and as the DataLoader peer's map-style dataset."""

    def __init__(self, folder: str, args: argparse.Namespace):
        import chute

        self.folder = Path(folder)
        self.args = args
        if (self.folder / "inputs").exists():
            self.kind = "packed"
            self.paths = {
                "inputs": str(self.folder / "inputs"),
                "targets": str(self.folder / "targets"),
            }
            self.dataset = lambda: chute.packed(self.paths)
        elif (self.folder / "input").exists():
            self.kind = "volume"
            self.paths = {
                "input": str(self.folder / "input"),
                "target": str(self.folder / "target"),
            }
            self.dataset = lambda: chute.crops(
                self.paths, size=args.crop_size, crops_per_epoch=args.crops_per_epoch,
                transforms="symmetries",
            )  # fmt: skip
        else:
            raise SystemExit(f"{folder}: not a packed or volume folder of chute make-dataset")

    def loader(self, **options: Any):
        import chute

        return chute.Loader(
            self.dataset(), batch_size=self.args.batch_size, threads=self.args.threads,
            prefetch=self.args.prefetch, seed=0, **options,
        )  # fmt: skip

    def peer_loader(self, reference) -> Iterator:
        """The DataLoader with pin_memory=True over the same batches as `reference` (a Loader)."""
        from torch.utils.data import DataLoader

        from chute.bench import peers

        batches = []
        crops = []
        core = reference.dataset._core
        n = len(reference)
        for b, batch in zip(range(n), reference.epoch(0)):
            if self.kind == "packed":
                batches.append([int(i) for i in batch.indices])
            else:
                rows = []
                for i in batch.indices:
                    corner, transform = core.crop(0, 0, int(i))
                    rows.append((*[int(c) for c in corner[-3:]], int(transform)))
                crops.append(rows)
            del batch
            if b + 1 >= self.args.peer_batches:
                break
        threads = self.args.threads
        if self.kind == "packed":
            dataset = peers._ZarrSamples(list(self.paths.values()))
        else:
            size = self.args.crop_size
            spec = {"volume": {"folder": str(self.folder), "zarr": list(self.paths.values())}}
            path = peers._volume_h5(spec)
            rows = [row for batch in crops for row in batch]
            starts = [0]
            for batch in crops:
                starts.append(starts[-1] + len(batch))
            batches = [list(range(starts[k], starts[k + 1])) for k in range(len(crops))]
            dataset = peers._H5Crops(path, rows, size)
        return iter(
            DataLoader(dataset, batch_sampler=batches, num_workers=threads, pin_memory=True,
                       persistent_workers=False)
        )  # fmt: skip


def _batch_nbytes(loader) -> int:
    total = 0
    for _name, dtype, shape in loader.dataset.outputs:
        elements = 1
        for extent in shape:
            elements *= int(extent)
        total += elements * {"float32": 4, "float16": 2, "bfloat16": 2}.get(dtype, 8)
    return total * loader.batch_size


def _copy_rate(torch, device, nbytes: int, pinned: bool, repeats: int) -> dict:
    """GB/s of one host buffer copied to the device on one stream (CUDA events)."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    host.fill_(1)
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        target.copy_(host, non_blocking=pinned)  # warm-up
        stream.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        wall = time.perf_counter()
        start.record(stream)
        for _ in range(repeats):
            target.copy_(host, non_blocking=pinned)
        end.record(stream)
        end.synchronize()
        wall = time.perf_counter() - wall
    seconds = start.elapsed_time(end) / 1e3
    return {
        "gb_per_s": _gb(nbytes * repeats) / seconds,
        "wall_gb_per_s": _gb(nbytes * repeats) / wall,
        "bytes": nbytes,
        "repeats": repeats,
    }


def _delivery_stage_rate(device: str, nbytes: int, batches: int) -> dict:
    """The delivery stage alone: chute's pool, stream and events over a pinned, assembled batch."""
    from chute import _chute

    seconds = _chute._testing_delivery_seconds(device, nbytes, batches)
    return {"gb_per_s": _gb(nbytes * batches) / seconds, "batches": batches, "bytes": nbytes}


def _time_batches(batches: Iterator, consume: Callable[[Any], None], count: int, warmup: int,
                  sync: Callable[[], None], stats: Callable[[], dict] | None = None) -> dict:  # fmt: skip
    """Wall time of `count` batches after `warmup`, each passed to `consume`; with `stats` (the
    loader's counters), where the loader's time went over the timed batches, per batch."""
    for _ in range(warmup):
        consume(next(batches))
    sync()
    before = stats() if stats else None
    start = time.perf_counter()
    done = 0
    for _ in range(count):
        try:
            batch = next(batches)
        except StopIteration:
            break
        consume(batch)
        done += 1
    sync()
    seconds = time.perf_counter() - start
    out = {"batches": done, "seconds": seconds, "s_per_batch": seconds / max(done, 1)}
    if stats:
        out["where"] = _where(before, stats(), done)
    return out


def _where(before: dict, after: dict, consumed: int) -> dict:
    """Milliseconds per batch of the producer's and the consumer's time, from the loader's
    counters taken before and after the timed batches."""
    produced = max(after["batches_produced"] - before["batches_produced"], 1)

    def ms(key: str, base: dict, now: dict, per: int) -> float:
        return 1e3 * (now[key] - base[key]) / max(per, 1)

    where = {
        "produced": produced,
        "assemble_ms": ms("produce_s", before, after, produced),
        "consumer_wait_ms": ms("wait_s", before, after, consumed),
        "host_buffers": after["buffers_allocated"],
        "host_buffers_new": after["buffers_allocated"] - before["buffers_allocated"],
    }
    d0, d1 = before.get("delivery"), after.get("delivery")
    if d0 and d1:
        copies = max(d1["copies"] - d0["copies"], 1)
        where.update(
            copies=copies,
            copy_submit_ms=ms("copy_submit_s", d0, d1, copies),
            acquire_ms=ms("acquire_s", d0, d1, copies) if "acquire_s" in d1 else float("nan"),
            copy_wait_ms=ms("host_wait_s", d0, d1, copies),
            copy_waits=d1["host_waits"] - d0["host_waits"],
            release_waits=d1["release_waits"] - d0["release_waits"],
            device_buffers=d1["device_buffers"],
            device_buffers_new=d1["device_buffers"] - d0["device_buffers"],
        )
    return where


class _Endless:
    """Batches of successive epochs of the loader `make()` returns (made at the first batch)."""

    def __init__(self, make: Callable[[], Any]):
        self.make = make
        self.loader = None
        self._it = self._batches()

    def _batches(self) -> Iterator:
        self.loader = self.make()
        while True:
            yield from self.loader

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def stats(self) -> dict:
        return self.loader.stats()

    def close(self) -> None:
        """Frees the loader now: freeing page-locked and device memory synchronises the GPU, so
        a loader collected later would stall the next timed run."""
        self._it.close()
        self.loader = None
        gc.collect()


class _GpuStep:
    """A real GPU step: a chain of square matrix products (bf16) reading the batch, sized to
    `target_ms`; the step's own time is measured alone with CUDA events."""

    def __init__(self, torch, device, target_ms: float):
        self.torch = torch
        self.device = device
        self.n = 4096
        self.a = torch.randn(self.n, self.n, device=device, dtype=torch.bfloat16)
        self.sink = torch.zeros((), device=device, dtype=torch.float32)
        self.timed: list | None = None
        per = self._measure(1, 5)
        self.chain = max(1, round(target_ms / max(per, 1e-3)))
        for _ in range(2):  # one product alone includes launch overheads: rescale on the chain
            self.chain = max(1, round(self.chain * target_ms / self._measure(self.chain, 3)))
        self.step_ms = self._measure(self.chain, 5)

    def __call__(self, tensors: list) -> None:
        torch = self.torch
        if self.timed is not None:  # after the stream's wait for the batch: the step's own time
            begin = torch.cuda.Event(enable_timing=True)
            begin.record()
        x = self.a
        for t in tensors:  # the step reads the batch: its copy must be complete on this stream
            self.sink += t.reshape(-1)[:: max(1, t.numel() // 4096)].float().sum()
        for _ in range(self.chain):
            x = torch.matmul(x, self.a)
        self.sink += x[0, 0].float()
        if self.timed is not None:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self.timed.append((begin, end))

    def busy_s(self) -> float:
        """GPU seconds of the steps timed since `timed` was set (the stream synchronised)."""
        return sum(b.elapsed_time(e) for b, e in self.timed) / 1e3

    def _measure(self, chain: int, repeats: int) -> float:
        torch = self.torch
        saved = getattr(self, "chain", None)
        self.chain = chain
        self([])
        torch.cuda.synchronize(self.device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            self([])
        end.record()
        end.synchronize()
        if saved is not None:
            self.chain = saved
        return start.elapsed_time(end) / repeats


def run(args: argparse.Namespace) -> dict:
    import torch

    import chute

    device = torch.device(args.device)
    if device.type != "cuda" or not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: PyTorch sees no CUDA GPU")
    torch.cuda.set_device(device)
    work = _Workload(args.dataset, args)
    probe = work.loader()
    nbytes = _batch_nbytes(probe)
    report: dict[str, Any] = {
        "dataset": str(work.folder),
        "workload": work.kind,
        "device": args.device,
        "gpu": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "chute": getattr(chute, "__version__", "?"),
        "threads": probe.threads,
        "batch_size": args.batch_size,
        "batch_bytes": nbytes,
        "batches": args.batches,
    }
    del probe

    def sync() -> None:
        torch.cuda.synchronize(device)

    def log(text: str) -> None:
        print(f"chute bench --device: {text}", file=sys.stderr, flush=True)

    # Roofline: the host-to-device step, in this run.
    repeats = max(3, int(4e9 // max(nbytes, 1)))
    log(f"roofline: copies of {nbytes / 1e6:.0f} MB, pinned and pageable")
    report["roofline"] = {
        "h2d_pinned": _copy_rate(torch, device, nbytes, True, repeats),
        "h2d_pageable": _copy_rate(torch, device, nbytes, False, max(3, repeats // 4)),
        "delivery_stage": _delivery_stage_rate(args.device, nbytes, repeats),
    }

    modes = set(args.modes.split(","))
    io: dict[str, Any] = {}
    from chute.torch import to_torch

    def consume_device(batch) -> None:
        to_torch(batch)  # torch.from_dlpack: the current stream waits for chute's copy

    def consume_host(batch) -> None:
        to_torch(batch)

    def consume_pageable(batch) -> None:
        for name in batch:
            torch.from_dlpack(batch.dlpack(name)).to(device)

    def consume_pinned(batch) -> None:
        for name in batch:
            torch.from_dlpack(batch.dlpack(name)).to(device, non_blocking=True)

    variants = {
        "chute_host": ({}, consume_host),
        "chute_pageable_copy": ({}, consume_pageable),
        "chute_pinned_copy": ({"pin_memory": True}, consume_pinned),
        "chute_device": ({"device": args.device}, consume_device),
    }
    if "io" in modes or "full" in modes:
        for name, (options, consume) in variants.items():
            runs = []
            for trial in range(args.trials):
                log(f"io: {name}, trial {trial + 1}/{args.trials}")
                batches = _Endless(lambda o=options: work.loader(**o))
                runs.append(_time_batches(batches, consume, args.batches, args.warmup, sync,
                                          batches.stats))  # fmt: skip
                batches.close()
            best = min(r["s_per_batch"] for r in runs)
            io[name] = {
                "trials": runs,
                "where": sorted(runs, key=lambda r: r["s_per_batch"])[len(runs) // 2]["where"],
                "s_per_batch": statistics.median(r["s_per_batch"] for r in runs),
                "best_s_per_batch": best,
                "gb_per_s": _gb(nbytes) / statistics.median(r["s_per_batch"] for r in runs),
            }
        report["io"] = io
        pinned = report["roofline"]["h2d_pinned"]["gb_per_s"]
        device_rate = io["chute_device"]["gb_per_s"]
        host_rate = io["chute_host"]["gb_per_s"]
        report["io_summary"] = {
            "delivered_vs_pinned_copy": device_rate / pinned,
            "delivered_vs_min_host_pinned": device_rate / min(pinned, host_rate),
            "delivery_stage_vs_pinned_copy": report["roofline"]["delivery_stage"]["gb_per_s"]
            / pinned,
        }

    if "full" in modes:
        target_ms = args.step_ms or 1e3 * io["chute_device"]["s_per_batch"]
        step = _GpuStep(torch, device, target_ms)
        full = {"step_ms": step.step_ms, "chain": step.chain, "target_ms": target_ms}
        for name in ("chute_device", "chute_pinned_copy"):
            options, _ = variants[name]

            def consume(batch, name=name) -> None:
                if name == "chute_device":
                    step(list(to_torch(batch).values())[:-1])
                else:
                    step([torch.from_dlpack(batch.dlpack(k)).to(device, non_blocking=True)
                          for k in batch])  # fmt: skip

            runs = []
            for trial in range(args.trials):
                log(f"full: {name} with a {step.step_ms:.1f} ms GPU step, trial {trial + 1}")
                batches = _Endless(lambda o=options: work.loader(**o))
                step.timed = []
                r = _time_batches(batches, consume, args.batches, args.warmup, sync,
                                  batches.stats)  # fmt: skip
                batches.close()
                timed = step.timed[args.warmup :]
                step.timed = timed
                busy = step.busy_s()
                step.timed = None
                r["utilisation"] = step.step_ms * 1e-3 * r["batches"] / r["seconds"]
                # The steps' own GPU time in this run (clocks under load, the batch's reads):
                # the GPU's idle share is what the loader did not hide.
                r["busy"] = busy / r["seconds"]
                r["step_ms_in_run"] = 1e3 * busy / max(len(timed), 1)
                runs.append(r)
            full[name] = {
                "trials": runs,
                "where": sorted(runs, key=lambda r: r["s_per_batch"])[len(runs) // 2]["where"],
                "utilisation": statistics.median(r["utilisation"] for r in runs),
                "busy": statistics.median(r["busy"] for r in runs),
                "step_ms_in_run": statistics.median(r["step_ms_in_run"] for r in runs),
                "s_per_batch": statistics.median(r["s_per_batch"] for r in runs),
            }
        report["full"] = full

    if "peer" in modes:
        peer: dict[str, Any] = {}
        try:
            reference = work.loader()

            def consume_peer(batch) -> None:
                for t in batch:
                    t.to(device, non_blocking=True)

            runs = []
            for trial in range(max(1, min(args.trials, 2))):
                log(f"peer: DataLoader(pin_memory=True, num_workers={args.threads}), trial "
                    f"{trial + 1}")  # fmt: skip
                batches = work.peer_loader(reference)
                runs.append(_time_batches(batches, consume_peer, args.peer_batches - args.warmup,
                                          args.warmup, sync))  # fmt: skip
                del batches
            peer["dataloader_pinned"] = {
                "trials": runs,
                "s_per_batch": statistics.median(r["s_per_batch"] for r in runs),
            }
            peer["dataloader_pinned"]["gb_per_s"] = (
                _gb(nbytes) / peer["dataloader_pinned"]["s_per_batch"]
            )
            if "chute_device" in io:
                peer["chute_device_vs_dataloader"] = (
                    peer["dataloader_pinned"]["s_per_batch"] / io["chute_device"]["s_per_batch"]
                )
        except Exception as error:  # noqa: BLE001 (a missing peer dependency must not lose the run)
            peer["error"] = f"{type(error).__name__}: {error}"
        report["peer"] = peer
    return report


def render(report: dict) -> str:
    lines = [
        (
            f"chute bench --device {report['device']}: {report['workload']} {report['dataset']}, "
            f"{report['gpu']}, batch {report['batch_size']} "
            f"({report['batch_bytes'] / 1e6:.1f} MB), {report['threads']} threads"
        ),
        "",
        "roofline (host to device, one stream)   GB/s",
    ]
    r = report["roofline"]
    lines.append(f"  pinned copy                          {r['h2d_pinned']['gb_per_s']:8.2f}")
    lines.append(f"  pageable copy                        {r['h2d_pageable']['gb_per_s']:8.2f}")
    lines.append(f"  chute delivery stage alone           {r['delivery_stage']['gb_per_s']:8.2f}")
    if "io" in report:
        lines += ["", "io                                     s/batch    GB/s"]
        for name, v in report["io"].items():
            lines.append(f"  {name:<36} {v['s_per_batch']:8.4f} {v['gb_per_s']:7.2f}")
        s = report["io_summary"]
        lines.append(
            f"  delivered / pinned copy rate: {100 * s['delivered_vs_pinned_copy']:.0f}%; "
            f"/ min(host rate, pinned copy): {100 * s['delivered_vs_min_host_pinned']:.0f}%; "
            f"delivery stage / pinned copy: {100 * s['delivery_stage_vs_pinned_copy']:.0f}%"
        )
        lines += _render_where(report["io"])
    if "full" in report:
        f = report["full"]
        lines += [
            "",
            (
                f"full (GPU step {f['step_ms']:.1f} ms alone)  utilisation  s/batch  GPU busy  "
                "step in run"
            ),
        ]
        for name in ("chute_device", "chute_pinned_copy"):
            v = f[name]
            lines.append(
                f"  {name:<30} {100 * v['utilisation']:6.1f}%  {v['s_per_batch']:.4f}   "
                f"{100 * v.get('busy', float('nan')):6.1f}%  "
                f"{v.get('step_ms_in_run', float('nan')):6.1f} ms"
            )
        lines.append(
            "  (utilisation: step alone x batches / wall; GPU busy: the steps' own GPU time in "
            "the run / wall)"
        )
        lines += _render_where(f)
    if "peer" in report:
        p = report["peer"]
        if "error" in p:
            lines += ["", f"peer: failed: {p['error']}"]
        else:
            d = p["dataloader_pinned"]
            lines += [
                "",
                f"peer DataLoader(pin_memory=True)     {d['s_per_batch']:8.4f} {d['gb_per_s']:7.2f}",
            ]
            if "chute_device_vs_dataloader" in p:
                lines.append(
                    f"  chute device= vs DataLoader: {p['chute_device_vs_dataloader']:.2f}x"
                )
    return "\n".join(lines)


def _render_where(results: dict) -> list[str]:
    """Where the loaders' time went, ms per batch over the timed batches."""
    lines = [
        (
            "  where (ms/batch)      assemble  consumer wait  copy submit (acquire)  copy wait  "
            "buffers host/device (+new)"
        )
    ]
    for name, v in results.items():
        w = v.get("where") if isinstance(v, dict) else None
        if not w:
            continue
        row = f"    {name:<20} {w['assemble_ms']:8.2f}  {w['consumer_wait_ms']:13.2f}"
        if "copies" in w:
            row += (
                f"  {w['copy_submit_ms']:11.2f} ({w['acquire_ms']:.2f})  {w['copy_wait_ms']:11.2f}"
                f"  {w['host_buffers']}/{w['device_buffers']} "
                f"(+{w['host_buffers_new']}/+{w['device_buffers_new']})"
            )
        else:
            row += f"  {'':>21}  {'':>9}  {w['host_buffers']} (+{w['host_buffers_new']})"
        lines.append(row)
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--prefetch", type=int, default=2)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--step-ms", type=float, default=0.0, help="0: the io mode's s/batch")
    parser.add_argument("--modes", default="io,full,peer")
    parser.add_argument("--peer-batches", type=int, default=12)
    parser.add_argument("--crop-size", type=int, default=128)
    parser.add_argument("--crops-per-epoch", type=int, default=4096)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    report = run(args)
    print(render(report), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
