"""Settings of chute's HTTP client (one per process, shared by every array and loader)."""

from __future__ import annotations

from typing import Any

from . import _chute

_NUMBER_OPTIONS = {
    "connect_timeout": float,
    "timeout": float,
    "stall_timeout": float,
    "stall_min_bytes_per_s": int,
    "max_retries": int,
    "backoff": float,
    "backoff_max": float,
    "max_in_flight": int,
    "coalesce_gap": int,
    "coalesce_max": int,
    "split_size": int,
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
        kind = _NUMBER_OPTIONS.get(name)
        if kind is None:
            known = ", ".join([*_NUMBER_OPTIONS, "verify_tls"])
            raise _chute.InvalidArgumentError(f"unknown HTTP option {name!r} (known: {known})")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _chute.InvalidArgumentError(f"HTTP option {name} must be a number, not {value!r}")
        if kind is int and value != int(value):
            raise _chute.InvalidArgumentError(f"HTTP option {name} must be a whole number")
        values[name] = kind(value)
    _chute._set_http_options(values)
    return previous
