"""Runs one action of the audit tests in a fresh interpreter, optionally under an address-space
limit, so that a crash shows as the child dying of a signal and a runaway allocation as a
failed allocation rather than the test machine swapping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

HANG_GUARD = 300  # seconds; only ever reached when something hangs

_PRELUDE = """
import json, resource, sys
import numpy as np
import chute

def _limit(extra):
    vm = [int(line.split()[1]) * 1024 for line in open("/proc/self/status")
          if line.startswith("VmSize")][0]
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, vm + extra))

if int(sys.argv[1]):
    _limit(int(sys.argv[1]))
try:
    RESULT = None
{body}
    print(json.dumps({{"ok": True, "result": RESULT}}))
except Exception as error:  # the child reports what it raised; the test judges it
    print(json.dumps({{"ok": False, "type": type(error).__name__, "message": str(error),
                      "chute": isinstance(error, chute.Error)}}))
"""


def run_child(body: str, *args: str, address_space_extra: int = 0, env: dict | None = None) -> dict:
    """Runs `body` (which may set RESULT to something JSON can hold) in a fresh interpreter
    whose address space may grow by `address_space_extra` bytes beyond what it holds after
    importing chute (0: no limit). Fails the test if the child dies of a signal."""
    code = _PRELUDE.format(body=textwrap.indent(textwrap.dedent(body), "    "))
    result = subprocess.run(
        [sys.executable, "-c", code, str(address_space_extra), *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
    if result.returncode < 0:
        pytest.fail(f"the child died of {signal.Signals(-result.returncode).name}: {result.stderr}")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
