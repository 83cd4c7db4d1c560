"""chute: training batches from chunked scientific arrays (Zarr v2/v3).

    >>> import chute
    >>> a = chute.open("data/temperature.zarr")     # or "group.zarr/member"
    >>> a.shape, a.dtype, a.chunks
    >>> a[3, :, ::2]                                 # NumPy basic indexing -> numpy.ndarray
    >>> g = chute.open_group("data/era5.zarr")       # Mapping: member name -> Array

Errors are chute.Error subclasses that also derive from the built-in exception that fits:

    InvalidArgumentError, InvalidMetadataError, UnsupportedError, CorruptDataError -> ValueError
    NotFoundError -> FileNotFoundError, PermissionDeniedError -> PermissionError,
    StorageError -> OSError, OutOfRangeError -> IndexError, InternalError -> RuntimeError,
    ReadTimeoutError -> TimeoutError, StoreUnavailableError -> ConnectionError,
    CancelledError -> chute.Error only.
"""

import atexit as _atexit
from importlib import metadata as _metadata

from . import _chute
from ._anemoi import AnemoiDataset, anemoi
from ._array import Array, Group, open, open_group
from ._chute import (
    CacheOptions,
    CancelledError,
    CorruptDataError,
    CropOptions,
    Error,
    HttpOptions,
    InternalError,
    InvalidArgumentError,
    InvalidMetadataError,
    LoaderOptions,
    NotFoundError,
    OutOfRangeError,
    PermissionDeniedError,
    ReadTimeoutError,
    StorageError,
    StorageOptions,
    StoreUnavailableError,
    UnsupportedError,
    WindowOptions,
    get_follow_symlinks,
    get_threads,
    set_follow_symlinks,
    set_threads,
)
from ._http import http_options, set_http_options
from ._storage import set_storage_options, storage_options
from ._strings import StringArray
from .loader import (
    Batch,
    Dataset,
    Loader,
    apply_cube_symmetry,
    crops,
    cube_symmetries,
    packed,
    windows,
)
from .weather_stats import compute_statistics, statistics


def _leak_report_at_exit() -> None:
    """A daemon thread still running at exit keeps what it holds (a Loader, a batch) alive for
    good: the interpreter never frees it, and nanobind would report those objects as leaked.
    Only then is the report turned off; a program whose threads have ended keeps it, so a real
    reference leak is still reported."""
    import threading

    main = threading.main_thread()
    if any(t.is_alive() and t is not main for t in threading.enumerate()):
        _chute._set_leak_warnings(False)


_atexit.register(_leak_report_at_exit)

try:
    __version__ = _metadata.version("chute")
except _metadata.PackageNotFoundError:  # running from a build tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "AnemoiDataset",
    "Array",
    "Batch",
    "CacheOptions",
    "CancelledError",
    "CorruptDataError",
    "CropOptions",
    "Dataset",
    "Error",
    "Group",
    "HttpOptions",
    "InternalError",
    "InvalidArgumentError",
    "InvalidMetadataError",
    "Loader",
    "LoaderOptions",
    "NotFoundError",
    "OutOfRangeError",
    "PermissionDeniedError",
    "ReadTimeoutError",
    "StorageError",
    "StorageOptions",
    "StoreUnavailableError",
    "StringArray",
    "UnsupportedError",
    "WindowOptions",
    "anemoi",
    "apply_cube_symmetry",
    "compute_statistics",
    "crops",
    "cube_symmetries",
    "get_follow_symlinks",
    "get_threads",
    "http_options",
    "open",
    "open_group",
    "packed",
    "set_follow_symlinks",
    "set_http_options",
    "set_storage_options",
    "set_threads",
    "statistics",
    "storage_options",
    "windows",
]
