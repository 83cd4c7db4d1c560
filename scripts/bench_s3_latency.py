"""`chute bench` on a W1 folder served by moto's S3 server behind the tests' proxy, which delays
every response by 5 ms: what a remote object store's latency does to the loader. moto and the
proxy run on 127.0.0.1 only and are stopped at the end.

    .venv/bin/python scripts/bench_s3_latency.py FOLDER [chute bench options...]

FOLDER is a `chute make-dataset packed` folder (arrays `inputs` and `targets`); the options go to
`chute bench` (e.g. `--sweep io_concurrency=1,4,16,64`, `--no-read-ahead`). CHUTE_CLI names the
chute executable (default build/release/src/chute/cli/chute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
from http_servers import FaultProxy, free_port

BUCKET = "chute-w1"
DELAY_S = 0.005


def main() -> int:
    import boto3

    folder = Path(sys.argv[1])
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proxy = None
    try:
        for _ in range(400):  # bounded: 400 x 50 ms
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=2).close()
                break
            except OSError:
                time.sleep(0.05)
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket=BUCKET)
        for path in folder.rglob("*"):
            if path.is_file():
                key = str(path.relative_to(folder))
                s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes(), ACL="public-read")
        proxy = FaultProxy(endpoint, delay_s=DELAY_S)
        env = dict(
            os.environ,
            AWS_ENDPOINT_URL_S3=proxy.url,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_REGION="us-east-1",
        )
        cli = os.environ.get("CHUTE_CLI", "build/release/src/chute/cli/chute")
        args = [cli, "bench", "--array", f"inputs=s3://{BUCKET}/inputs"]
        args += ["--array", f"targets=s3://{BUCKET}/targets", *sys.argv[2:]]
        print(" ".join(args), flush=True)
        return subprocess.run(args, env=env, check=False).returncode
    finally:
        if proxy is not None:
            proxy.stop()
        moto.terminate()
        moto.wait()


if __name__ == "__main__":
    sys.exit(main())
