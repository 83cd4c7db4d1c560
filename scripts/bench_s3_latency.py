"""`chute bench` on a W1 folder served as an S3 bucket on 127.0.0.1, every request delayed by
5 ms: what a remote object store's latency does to the loader and to its peers.

    .venv/bin/python scripts/bench_s3_latency.py [--server nginx|moto] [--delay-ms 5]
        FOLDER [chute bench options...]

--server nginx (the default): nginx from Debian serves FOLDER path-style (GET /bucket/key with
Range, HEAD) with sendfile; the echo module (libnginx-mod-http-echo) holds each request for the
delay without holding a thread, then serves it from the file. S3 readers with a custom endpoint,
path-style addressing and consolidated metadata need no listing, and nginx ignores their
signatures. Unlike moto behind a Python proxy, which capped every reader at 0.2-0.34 GB/s, this
server is not the bottleneck. At the end the script prints nginx's own counters: connections
accepted and requests served (how many connections each reader opened).

--server moto: moto's S3 server behind the tests' Python fault proxy (which delays the
responses): a real S3 implementation (signatures, listing), but slow.

FOLDER is a `chute make-dataset packed` folder (arrays `inputs` and `targets`); the options go to
`chute bench` (e.g. `--sweep io_concurrency=1,4,16,64`, `--no-read-ahead`, `--compare
zarr,tensorstore`). CHUTE_CLI names the chute executable (default
build/release/tools/chute/cli/chute). Servers listen on 127.0.0.1 only and are stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
from http_servers import FaultProxy, _wait_listening, free_port

BUCKET = "chute-w1"
ECHO_MODULE = Path("/usr/lib/nginx/modules/ngx_http_echo_module.so")


class DelayedNginx:
    """nginx serving `folder` as /BUCKET/... on 127.0.0.1, each request held `delay_s` first."""

    def __init__(self, folder: Path, delay_s: float):
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(nginx).exists() or not ECHO_MODULE.exists():
            raise SystemExit("--server nginx needs nginx-light and libnginx-mod-http-echo (apt)")
        self._tmp = tempfile.TemporaryDirectory(prefix="chute-s3-nginx-")
        tmp = Path(self._tmp.name)
        (tmp / "root").mkdir()
        (tmp / "root" / BUCKET).symlink_to(folder.resolve(), target_is_directory=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        user = "user root;" if os.geteuid() == 0 else ""
        delay = f"echo_sleep {delay_s:.3f}; echo_exec @object;" if delay_s > 0 else ""
        (tmp / "nginx.conf").write_text(f"""
load_module {ECHO_MODULE};
{user}
daemon off;
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 600s;
  sendfile on;
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{self.port} backlog=1024;
    location = /nginx-status {{ stub_status; }}
    location /{BUCKET}/ {{ {delay} root {tmp}/root; }}
    location @object {{ root {tmp}/root; }}
  }}
}}
""")
        self._process = subprocess.Popen(
            [nginx, "-c", str(tmp / "nginx.conf"), "-p", str(tmp)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _wait_listening(self.port, self._process)

    def counters(self) -> dict[str, int]:
        """nginx's stub_status: connections accepted and requests served so far."""
        text = urllib.request.urlopen(self.url + "/nginx-status", timeout=5).read().decode()
        accepts, _handled, requests = map(int, re.search(r"\n\s*(\d+) (\d+) (\d+)", text).groups())
        return {"connections": accepts, "requests": requests - 1}  # less this status request

    def cpu_s(self) -> float:
        """User + system CPU seconds of nginx's master and workers so far."""
        ticks = os.sysconf("SC_CLK_TCK")
        pids = [self._process.pid]
        children = Path(f"/proc/{self._process.pid}/task/{self._process.pid}/children")
        if children.exists():
            pids += [int(pid) for pid in children.read_text().split()]
        total = 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        return total

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        self._tmp.cleanup()


class MotoBehindProxy:
    """moto's S3 server with FOLDER uploaded, behind the tests' proxy delaying every response."""

    def __init__(self, folder: Path, delay_s: float):
        import boto3

        port = free_port()
        endpoint = f"http://127.0.0.1:{port}"
        self._moto = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._proxy = None
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
        self._proxy = FaultProxy(endpoint, delay_s=delay_s)
        self.url = self._proxy.url

    def counters(self) -> dict[str, int]:
        return {"requests": self._proxy.requests, "most_at_once": self._proxy.most_active}

    def stop(self) -> None:
        if self._proxy is not None:
            self._proxy.stop()
        self._moto.terminate()
        self._moto.wait()


def print_cpu_table(json_path: Path) -> None:
    """CPU seconds per sample (user + system of each reader's process over its timed batches)
    beside its rate, and chute's decode-only CPU per sample from the roofline."""
    try:
        report = json.loads(json_path.read_text())
    except (OSError, ValueError):
        return
    rows = []
    for mode, result in report.get("modes", {}).items():
        rows.append(
            (f"chute ({mode})", result["samples_per_s"]["mean"], result["cpu_s_per_sample"])
        )
    for peer in report.get("peers", []):
        if peer.get("status") == "ok":
            rows.append((peer["name"], peer["samples_per_s"]["mean"], peer.get("cpu_s_per_sample")))
    print("\nCPU per sample (user + system of the reader's process over its timed batches):")
    print(f"  {'reader':<14} {'samples/s':>10} {'CPU ms/sample':>14} {'cores busy':>11}")
    for name, rate, cpu in rows:
        cpu_ms = f"{cpu * 1e3:.1f}" if cpu else "-"
        busy = f"{cpu * rate:.2f}" if cpu else "-"
        print(f"  {name:<14} {rate:>10.2f} {cpu_ms:>14} {busy:>11}")
    roofline = report.get("roofline") or {}
    sample_bytes = (report.get("dataset") or {}).get("sample_bytes")
    single = roofline.get("decode_single_gbps")
    if sample_bytes and single:
        print(
            f"  chute decode only (roofline, 1 thread): {sample_bytes / (single * 1e9) * 1e3:.1f} "
            f"CPU ms/sample ({single:.3f} GB/s of decoded bytes per core)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=("nginx", "moto"), default="nginx")
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("folder", type=Path)
    args, bench_options = parser.parse_known_args()
    server_type = DelayedNginx if args.server == "nginx" else MotoBehindProxy
    server = server_type(args.folder, args.delay_ms / 1000)
    try:
        env = dict(
            os.environ,
            AWS_ENDPOINT_URL_S3=server.url,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_REGION="us-east-1",
        )
        cli = os.environ.get("CHUTE_CLI", "build/release/tools/chute/cli/chute")
        command = [cli, "bench", "--array", f"inputs=s3://{BUCKET}/inputs"]
        command += ["--array", f"targets=s3://{BUCKET}/targets", *bench_options]
        print(
            f"server: {args.server} on {server.url}, {args.delay_ms:g} ms per request", flush=True
        )
        print(" ".join(command), flush=True)
        json_path = None
        if "--json" not in bench_options:
            json_path = Path(tempfile.mkstemp(prefix="chute-s3-bench-", suffix=".json")[1])
            command += ["--json", str(json_path)]
        else:
            json_path = Path(bench_options[bench_options.index("--json") + 1])
        cpu_before = server.cpu_s() if hasattr(server, "cpu_s") else None
        code = subprocess.run(command, env=env, check=False).returncode
        print(f"server counters: {server.counters()}", flush=True)
        if cpu_before is not None:
            print(f"server CPU over the whole run: {server.cpu_s() - cpu_before:.2f} s", flush=True)
        print_cpu_table(json_path)
        return code
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
