"""Plots of a ``chute bench`` JSON report (schema "chute-bench/1").

    python -m chute.bench.plots results.json --out DIR

writes, when the report has the data for them:

- ``throughput_vs_threads.png``: samples/s (and GB/s) of the thread sweep, with the ideal
  linear scaling from the smallest thread count and the roofline as a horizontal line;
- ``time_breakdown.png``: per-batch time split (read, decode, assemble, wait, compute) as
  stacked bars per mode;
- ``queue_occupancy.png``: batches ready in the prefetch queue at each request, over time;
- ``peers.png``: samples/s of chute and each peer on the same batches, with chute ÷ peer.

Each written path is printed on its own line. When matplotlib is missing the helper prints
``skipped: matplotlib is not installed`` and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

COLORS = {
    "read": "#4C72B0",
    "decode": "#DD8452",
    "assemble": "#55A868",
    "wait": "#C44E52",
    "compute": "#8172B3",
}
MODE_COLORS = {"io": "#4C72B0", "full": "#C44E52", "compute": "#8172B3"}


def _mean(value) -> float:
    if isinstance(value, dict):
        return float(value.get("mean") or 0.0)
    return float(value or 0.0)


def _std(value) -> float:
    return float(value.get("std") or 0.0) if isinstance(value, dict) else 0.0


def _subtitle(report: dict) -> str:
    machine = report.get("machine", {})
    dataset = report.get("dataset", {})
    settings = report.get("settings", {})
    return (
        f"{dataset.get('workload', '?')} dataset, batch {settings.get('batch_size', '?')}; "
        f"{machine.get('usable_cores', '?')} cores, {machine.get('cpu_model', '')}"
    )


def _save(fig, report: dict, path: Path, plt) -> Path:
    """Adds the dataset/machine footer, writes the PNG and closes the figure."""
    fig.text(0.5, 0.005, _subtitle(report), ha="center", fontsize=8, color="dimgrey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_threads(report: dict, out: Path, plt) -> Path | None:
    """Sweep throughput against threads, one line per (prefetch, batch) group."""
    sweeps = [s for s in report.get("sweeps", []) if len(s.get("points", [])) >= 1]
    if not sweeps:
        return None
    points = sweeps[0]["points"]
    groups: dict[tuple[int, int], list[dict]] = {}
    for p in points:
        groups.setdefault((p["prefetch"], p["batch_size"]), []).append(p)
    fig, ax = plt.subplots(figsize=(8, 5.2))
    sample_bytes = float(report.get("dataset", {}).get("sample_bytes") or 0)
    all_threads = sorted({p["threads"] for p in points})
    for (prefetch, batch), members in groups.items():
        members.sort(key=lambda p: p["threads"])
        threads = [p["threads"] for p in members]
        rates = [p["samples_per_s"] for p in members]
        errors = [p.get("samples_per_s_std", 0) for p in members]
        ax.errorbar(
            threads,
            rates,
            yerr=errors,
            marker="o",
            capsize=4,
            linewidth=2,
            label=f"chute, prefetch {prefetch}, batch {batch}",
        )
        if len(members) > 1:
            base_t, base_r = threads[0], rates[0]
            ax.plot(
                threads,
                [base_r * t / base_t for t in threads],
                linestyle=":",
                color="grey",
                label="ideal linear scaling" if (prefetch, batch) == next(iter(groups)) else None,
            )
    # The roofline in samples/s: GB/s of decoded bytes ÷ bytes per sample.
    limits = {}
    for p in points:
        if p.get("roofline_gbps"):
            limits[p["threads"]] = p["roofline_gbps"]
    roofline = report.get("roofline") or {}
    if sample_bytes > 0 and limits:
        xs = sorted(limits)
        ys = [limits[t] * 1e9 / sample_bytes for t in xs]
        ax.plot(
            xs,
            ys,
            color="black",
            linestyle="--",
            marker="s",
            linewidth=1.5,
            label="roofline: read + decode + place limit at that thread count",
        )
    elif sample_bytes > 0 and roofline.get("combined_gbps"):
        ax.axhline(
            roofline["combined_gbps"] * 1e9 / sample_bytes,
            color="black",
            linewidth=1.5,
            label=f"roofline at {roofline.get('threads')} threads",
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(all_threads)
    ax.set_xticklabels([str(t) for t in all_threads])
    ax.set_xlabel("reader threads")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_ylim(bottom=0)
    if sample_bytes > 0:
        secondary = ax.secondary_yaxis(
            "right", functions=(lambda s: s * sample_bytes / 1e9, lambda g: g * 1e9 / sample_bytes)
        )
        secondary.set_ylabel("throughput (GB/s decoded)")
    fit = sweeps[0].get("amdahl")
    title = "chute loader: throughput vs threads"
    if fit:
        title += (
            f"\nAmdahl serial fraction {fit['serial_fraction']:.3f} → predicted "
            f"{fit['predicted_speedup_16']:.1f}× at 16, {fit['predicted_speedup_64']:.1f}× "
            "at 64 threads"
        )
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    return _save(fig, report, out / "throughput_vs_threads.png", plt)


def plot_breakdown(report: dict, out: Path, plt) -> Path | None:
    """Per mode, two bars: the workers' parts (read, decode, assemble, summed over threads and
    divided by the thread count) and the consumer's (wait, compute). Both are views of the same
    wall-clock time per batch, so they stand side by side rather than stacked on each other."""
    modes = [m for m in ("io", "compute", "full") if m in report.get("modes", {})]
    if not modes:
        return None
    threads = report.get("settings", {}).get("threads", 1) or 1
    sides = {"workers": ("read", "decode", "assemble"), "consumer": ("wait", "compute")}
    width = 0.36
    fig, ax = plt.subplots(figsize=(8, 5.2))
    for side_index, (side, parts) in enumerate(sides.items()):
        offset = (side_index - 0.5) * (width + 0.02)
        positions = [i + offset for i in range(len(modes))]
        bottoms = [0.0] * len(modes)
        for part in parts:
            values = []
            for mode in modes:
                seconds = report["modes"][mode]["breakdown_s_per_batch"].get(part) or 0.0
                if side == "workers":
                    seconds /= threads  # worker time summed over threads -> wall-clock share
                values.append(seconds * 1e3)
            ax.bar(positions, values, bottom=bottoms, color=COLORS[part], label=part, width=width)
            bottoms = [b + v for b, v in zip(bottoms, values)]
        for i, top in enumerate(bottoms):
            if top > 0:
                ax.annotate(side, (positions[i], top), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels(modes)
    for i, mode in enumerate(modes):
        wall = _mean(report["modes"][mode].get("s_per_batch")) * 1e3
        ax.plot(
            [i - 0.42, i + 0.42],
            [wall, wall],
            color="black",
            linewidth=2,
            label="measured s/batch" if i == 0 else None,
        )
    ax.set_ylabel("time per batch (ms)")
    ax.set_xlabel("mode")
    ax.set_title(
        f"Where a batch's time goes: workers (÷ {threads} threads) beside the consumer",
        fontsize=11,
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9, ncol=2)
    return _save(fig, report, out / "time_breakdown.png", plt)


def plot_queue(report: dict, out: Path, plt) -> Path | None:
    """Queue occupancy at each consumer request, over the trials' time."""
    series = []
    for mode in ("io", "full"):
        queue = report.get("modes", {}).get(mode, {}).get("queue", {})
        if queue.get("t_s"):
            series.append((mode, queue))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    capacity = 0
    for mode, queue in series:
        capacity = max(capacity, queue.get("capacity") or 0)
        ax.step(
            queue["t_s"],
            queue["occupancy"],
            where="post",
            linewidth=1.5,
            color=MODE_COLORS[mode],
            label=f"{mode} (mean {queue.get('mean_occupancy', 0):.2f}, empty "
            f"{100 * queue.get('empty_fraction', 0):.0f}% of requests)",
        )
    if capacity:
        ax.axhline(
            capacity, color="black", linestyle="--", linewidth=1, label=f"capacity ({capacity})"
        )
    ax.set_xlabel("time since the first trial began (s)")
    ax.set_ylabel("batches ready in the queue")
    ax.set_ylim(-0.1, max(capacity, 1) + 0.6)
    ax.set_title("Prefetch queue occupancy when the consumer asks for a batch", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    return _save(fig, report, out / "queue_occupancy.png", plt)


def plot_peers(report: dict, out: Path, plt) -> Path | None:
    """Bars of samples/s: chute's io mode and every peer that ran, on the same batches."""
    peers = [p for p in report.get("peers", []) if p.get("status") == "ok"]
    io = report.get("modes", {}).get("io")
    if not peers or not io:
        return None
    names = ["chute"] + [p["name"] for p in peers]
    rates = [_mean(io["samples_per_s"])] + [_mean(p["samples_per_s"]) for p in peers]
    errors = [_std(io["samples_per_s"])] + [_std(p["samples_per_s"]) for p in peers]
    colors = ["#4C72B0"] + ["#999999"] * len(peers)
    fig, ax = plt.subplots(figsize=(8, 5.2))
    bars = ax.bar(names, rates, yerr=errors, capsize=4, color=colors, width=0.6)
    for bar, rate, error in zip(bars[1:], rates[1:], errors[1:]):
        if rate > 0:
            ax.annotate(
                f"chute {rates[0] / rate:.1f}×",
                (bar.get_x() + bar.get_width() / 2, rate + error),
                ha="center",
                va="bottom",
                fontsize=9,
                xytext=(0, 3),
                textcoords="offset points",
            )
    skipped = [p["name"] for p in report.get("peers", []) if p.get("status") != "ok"]
    title = f"Same batches, {report.get('settings', {}).get('threads', '?')} threads: samples/s"
    if skipped:
        title += f"\n(skipped: {', '.join(skipped)})"
    if max(rates) / max(min(r for r in rates if r > 0), 1e-12) > 50:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=11)
    ax.set_ylabel("throughput (samples/s)")
    ax.set_xlabel("reader")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, report, out / "peers.png", plt)


def make_plots(report: dict, out: Path) -> list[Path]:
    """Writes every plot the report has data for; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for plot in (plot_threads, plot_breakdown, plot_queue, plot_peers):
        path = plot(report, out, plt)
        if path is not None:
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chute.bench.plots",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", help="the JSON report of chute bench --json")
    parser.add_argument("--out", required=True, help="folder for the PNG files")
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: matplotlib is not installed")
        return 0
    report = json.loads(Path(args.results).read_text())
    for path in make_plots(report, Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
