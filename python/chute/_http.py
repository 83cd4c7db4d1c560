"""Settings of chute's HTTP client (one per process, shared by every array and loader)."""

from __future__ import annotations

from typing import Any

from . import _chute


def http_options() -> dict[str, Any]:
    """The HTTP client's current settings (see set_http_options)."""
    return dict(_chute._http_options())


def set_http_options(**options: Any) -> dict[str, Any]:
    """Changes the process-wide HTTP client settings; returns the previous ones.

    Applies to requests started afterwards; the options not named keep their current value.
    Each value is checked in C++ (chute.InvalidArgumentError naming the option, for an unknown
    name or a bad value; nothing changes then). The options (chute.HttpOptions):

    .. BEGIN GENERATED HttpOptions doc
    `connect_timeout` (default 10.0): seconds to connect (TCP and TLS handshake) (in [0.001,
        1000000])
    `timeout` (default 300.0): seconds per request attempt, start to last byte (in [0.001,
        1000000])
    `stall_timeout` (default 30.0): seconds a transfer may stay below stall_min_bytes_per_s
        before it is aborted and retried (in [1, 1000000])
    `stall_min_bytes_per_s` (default 1): bytes per second under which a transfer counts as
        stalled (>= 1)
    `max_retries` (default 5): retries of a failed request (timeouts, resets, short bodies,
        429, 5xx) (in [0, 100])
    `backoff` (default 0.05): seconds of the first retry's backoff (full jitter, doubling
        per attempt) (in [0, 1000000])
    `backoff_max` (default 5.0): seconds a retry's backoff may reach (>= backoff) (in [0,
        1000000])
    `max_in_flight` (default 64): HTTP requests running at once in the whole process (in [1,
        4096])
    `coalesce_gap` (default 1048576): bytes between two ranges of one file read as one GET
    `coalesce_max` (default 16777216): largest read that coalescing makes, in bytes (>= 1)
    `split_size` (default 16777216): bytes above which one range goes out as parallel parts
        (>= 4096)
    `verify_tls` (default True): check the server's TLS certificate and host name
    .. END GENERATED
    """
    previous = http_options()
    _chute._set_http_options(**options)
    return previous
