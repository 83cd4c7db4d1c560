"""Settings of chute's HTTP client (one per process, shared by every array and loader)."""

from __future__ import annotations

from typing import Any

from . import _chute

_MAX_SECONDS = 1e6  # the core's kMaxHttpSeconds
_UINT64_MAX = 2**64 - 1

# name: (type, lowest, highest), the ranges the core's validate(HttpOptions) allows.
_NUMBER_OPTIONS: dict[str, tuple[type, float, float]] = {
    "connect_timeout": (float, 1e-3, _MAX_SECONDS),
    "timeout": (float, 1e-3, _MAX_SECONDS),
    "stall_timeout": (float, 1.0, _MAX_SECONDS),
    "stall_min_bytes_per_s": (int, 1, 2**63 - 1),
    "max_retries": (int, 0, 100),
    "backoff": (float, 0.0, _MAX_SECONDS),
    "backoff_max": (float, 0.0, _MAX_SECONDS),
    "max_in_flight": (int, 1, 4096),
    "coalesce_gap": (int, 0, _UINT64_MAX),
    "coalesce_max": (int, 1, _UINT64_MAX),
    "split_size": (int, 4096, _UINT64_MAX),
}


def http_options() -> dict[str, Any]:
    """The HTTP client's current settings (see set_http_options)."""
    return dict(_chute._http_options())


def set_http_options(**options: Any) -> dict[str, Any]:
    """Changes the process-wide HTTP client settings; returns the previous ones.

    connect_timeout, timeout (one attempt, seconds), stall_timeout (seconds below
    stall_min_bytes_per_s before a stalled transfer is aborted and retried), max_retries,
    backoff / backoff_max (full-jitter exponential backoff, seconds), max_in_flight (requests
    running at once in the whole process), coalesce_gap / coalesce_max / split_size (bytes),
    verify_tls. Applies to requests started afterwards. Raises chute.InvalidArgumentError
    for an unknown name or a bad value.
    """
    previous = http_options()
    values: dict[str, Any] = {}
    for name, value in options.items():
        if name == "verify_tls":
            if not isinstance(value, bool):
                raise _chute.InvalidArgumentError("HTTP option verify_tls must be True or False")
            values[name] = value
            continue
        spec = _NUMBER_OPTIONS.get(name)
        if spec is None:
            known = ", ".join([*_NUMBER_OPTIONS, "verify_tls"])
            raise _chute.InvalidArgumentError(f"unknown HTTP option {name!r} (known: {known})")
        kind, low, high = spec
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _chute.InvalidArgumentError(f"HTTP option {name} must be a number, not {value!r}")
        if kind is int and value != int(value):
            raise _chute.InvalidArgumentError(f"HTTP option {name} must be a whole number")
        if not low <= value <= high:  # a NaN is never inside
            raise _chute.InvalidArgumentError(
                f"HTTP option {name}={value!r} is outside [{low:g}, {high:g}]"
                if kind is float
                else f"HTTP option {name}={value!r} is outside [{low}, {high}]"
            )
        values[name] = kind(value)
    _chute._set_http_options(values)
    return previous
