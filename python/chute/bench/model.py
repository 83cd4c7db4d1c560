"""A real small PyTorch model for `chute bench --model torch`: times training steps on one batch.

    python -m chute.bench.model --array inputs=data/packed/inputs --array targets=... \\
        --indices 3,17,42 --threads 2 --steps 5 --warmup 1

The batch (the given sample indices of every array, read with chute) is the cached batch of the
compute mode. The model is a per-pixel MLP (two 1x1 convolutions, 64 hidden channels) from the
first array's channels to the last array's, trained with MSE and SGD on the CPU: small, but a
real forward, backward and optimiser step over the whole batch. Prints one JSON line:
{"status": "ok", "step_ms": [...], ...} or {"status": "skipped", "note": ...}.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--array", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--indices", required=True, help="comma-separated sample indices")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        print(json.dumps({"status": "skipped", "note": f"PyTorch is not installed ({error})"}))
        return

    import chute

    indices = sorted(int(i) for i in args.indices.split(","))
    arrays = [chute.open(spec.split("=", 1)[1]) for spec in args.array]
    batch = [np.stack([a[i] for i in indices]) for a in arrays]  # (batch, lat, lon, channels)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    x = torch.from_numpy(batch[0]).float().permute(0, 3, 1, 2)  # channels first for Conv2d
    y = torch.from_numpy(batch[-1]).float().permute(0, 3, 1, 2)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(x.shape[1], 64, kernel_size=1),
        torch.nn.GELU(),
        torch.nn.Conv2d(64, y.shape[1], kernel_size=1),
    )
    optimiser = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> float:
        start = time.perf_counter()
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimiser.step()
        return (time.perf_counter() - start) * 1e3

    for _ in range(args.warmup):
        step()
    step_ms = [step() for _ in range(args.steps)]
    print(
        json.dumps(
            {
                "status": "ok",
                "step_ms": step_ms,
                "batch_size": len(indices),
                "parameters": sum(p.numel() for p in model.parameters()),
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "description": f"per-pixel MLP {x.shape[1]}->64->{y.shape[1]} channels, "
                "MSE + SGD, forward + backward + step on the CPU",
            }
        )
    )


if __name__ == "__main__":
    main()
