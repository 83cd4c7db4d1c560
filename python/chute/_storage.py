"""Options of the object stores (s3://, gs://), process-wide, for every array and loader."""

from __future__ import annotations

from typing import Any

from . import _chute


def storage_options(scheme: str = "s3") -> dict[str, Any]:
    """The options set for `scheme` ("s3" or "gs") with set_storage_options."""
    return dict(_chute._storage_options(scheme))


def set_storage_options(scheme: str = "s3", **options: Any) -> dict[str, Any]:
    """Sets the options every `scheme` URL opened afterwards uses; returns the previous ones.

    Options not given (or None) come from the environment (see docs/storage/object-stores.md);
    set_storage_options("s3") with no options clears them. Each value is checked in C++
    (chute.InvalidArgumentError for an unknown scheme, name, a bad value, or an option the
    scheme does not take). The options (chute.StorageOptions):

    .. BEGIN GENERATED StorageOptions doc
    `endpoint_url` (default None): the server, e.g. "http://127.0.0.1:9000" for an
        S3-compatible one (path-style addressing); None: from the environment
    `region` (default None): the bucket's region (s3 only); None: from the environment
    `profile` (default None): a section of ~/.aws/credentials or ~/.aws/config (s3 only);
        None: from the environment
    `access_key_id` (default None): the access key (s3 only); None: from the environment
    `secret_access_key` (default None): the secret of access_key_id (s3 only); None: from
        the environment
    `session_token` (default None): a temporary credential's token (s3 only); None: from the
        environment
    `token` (default None): an OAuth2 access token, sent as a bearer token (gs only); None:
        from the environment
    `anonymous` (default None): True: unsigned requests, no credentials looked up; None:
        from the environment (AWS_NO_SIGN_REQUEST)
    `addressing_style` (default None): how the bucket is addressed: ENDPOINT/BUCKET (path)
        or BUCKET.ENDPOINT (virtual); s3 only; None: path for a custom endpoint, else
        virtual
    .. END GENERATED
    """
    previous = storage_options(scheme)
    _chute._set_storage_options(scheme, **options)
    return previous
