#!/usr/bin/env bash
# The demo: installs and builds chute, generates the default `packed` dataset once (about 1.5 GB,
# data/packed), then benchmarks the loader against the peers with a small thread sweep.
# Tables go to the terminal; JSON and PNG plots to bench-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
data=${CHUTE_DEMO_DATA:-data/packed}
if [ ! -f "$data/chute.json" ]; then
  chute make-dataset packed "$data"
fi
chute bench "$data" --compare zarr,dask,tensorstore,torch --sweep threads=1,2 \
  --out bench-out --json bench-out/results.json "$@"
