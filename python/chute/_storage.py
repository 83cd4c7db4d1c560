"""Options of the object stores (s3://, gs://), process-wide, for every array and loader."""

from __future__ import annotations

from typing import Any

from . import _chute

_S3 = ("endpoint_url", "region", "profile", "access_key_id", "secret_access_key",
       "session_token", "anonymous", "addressing_style")  # fmt: skip
_GS = ("endpoint_url", "token", "anonymous")


def storage_options(scheme: str = "s3") -> dict[str, Any]:
    """The options set for `scheme` ("s3" or "gs") with set_storage_options."""
    values: dict[str, Any] = dict(_chute._storage_options(scheme))
    if "anonymous" in values:
        values["anonymous"] = values["anonymous"] == "true"
    return values


def set_storage_options(scheme: str = "s3", **options: Any) -> dict[str, Any]:
    """Sets the options every `scheme` URL opened afterwards uses; returns the previous ones.

    s3: endpoint_url ("http://127.0.0.1:9000" for an S3-compatible server; path-style
    addressing), region, profile (a section of ~/.aws/credentials or ~/.aws/config),
    access_key_id + secret_access_key (+ session_token), anonymous (True: unsigned requests),
    addressing_style ("path" or "virtual"). gs: endpoint_url, token (an OAuth2 access token,
    sent as a bearer token), anonymous. Unset options come from the environment (see
    docs/storage/object-stores.md). set_storage_options("s3") with no options clears them. Raises
    chute.InvalidArgumentError for an unknown scheme, name or a bad value.
    """
    known = {"s3": _S3, "gs": _GS}.get(scheme)
    if known is None:
        raise _chute.InvalidArgumentError(f"storage options are for 's3' or 'gs', not {scheme!r}")
    settings: dict[str, str] = {}
    for name, value in options.items():
        if name not in known:
            raise _chute.InvalidArgumentError(
                f"unknown {scheme} storage option {name!r} (known: {', '.join(known)})"
            )
        if name == "anonymous":
            if not isinstance(value, bool):
                raise _chute.InvalidArgumentError("storage option anonymous must be True or False")
            settings[name] = "true" if value else "false"
        elif value is not None:
            if not isinstance(value, str):
                raise _chute.InvalidArgumentError(f"storage option {name} must be a string")
            settings[name] = value
    previous = storage_options(scheme)
    _chute._set_storage_options(scheme, settings)
    return previous
