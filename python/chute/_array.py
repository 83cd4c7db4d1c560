"""Arrays and groups: NumPy basic indexing over the core's box reads.

Every read allocates one fresh NumPy array for the bounding box of the request and has the core
decode chunks straight into it (the GIL is released meanwhile); strides, dropped axes and new
axes are then applied as NumPy views, so results match NumPy's basic indexing exactly.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import _chute, _pickling, _references
from ._options import flag as _flag
from ._options import invalid as _invalid
from ._strings import StringArray, open_strings

__all__ = ["Array", "Group", "open", "open_group"]

_BASIC_INDEX_HELP = (
    "only integers, slices (`:`), ellipsis (`...`) and numpy.newaxis (`None`) are valid indices "
    "of a chute.Array; for fancy indexing read a box first (np.asarray(a[box])[index])"
)


def _as_raw(out: np.ndarray) -> np.ndarray:
    """A view the binding accepts: NumPy dtypes from ml_dtypes (bfloat16) have no DLPack code,
    so their bits go in as uint16 (the same memory); datetime64/timedelta64 as int64."""
    if out.dtype.kind == "V" or out.dtype.name == "bfloat16":
        return out.view(np.uint16) if out.dtype.itemsize == 2 else out
    if out.dtype.kind in "Mm":  # datetime64/timedelta64: int64 counts, which DLPack can carry
        return out.view(np.int64)
    return out


def _numpy_dtype(core: Any) -> np.dtype:
    if core.dtype_name == "bfloat16":
        import ml_dtypes  # optional: only arrays of bfloat16 need it

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(core.dtype_str)


def _as_index(item: Any, axis: int, size: int) -> int:
    """The non-negative position of integer index `item` on an axis of `size`."""
    index = operator.index(item)
    if index < -size or index >= size:
        raise _chute.OutOfRangeError(
            f"index {index} is out of bounds for axis {axis} with size {size}"
        )
    return index % size


def _is_integer(item: Any) -> bool:
    if isinstance(item, (bool, np.bool_)):
        return False
    if isinstance(item, (int, np.integer)):
        return True
    if isinstance(item, (np.ndarray, list, tuple, float, complex, str, bytes)):
        return False
    return hasattr(item, "__index__")


def _expand_key(key: Any, ndim: int) -> list:
    """The key as a list with one entry per axis (plus None entries), Ellipsis expanded."""
    items = list(key) if isinstance(key, tuple) else [key]
    ellipses = sum(1 for item in items if item is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    indexed = sum(1 for item in items if item is not None and item is not Ellipsis)
    if indexed > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {indexed} were indexed"
        )
    fill = [slice(None)] * (ndim - indexed)
    if ellipses:
        at = next(i for i, item in enumerate(items) if item is Ellipsis)
        return items[:at] + fill + items[at + 1 :]
    return items + fill


def plan_basic_index(
    key: Any, shape: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple, bool]:
    """Splits a basic index into a box to read and a NumPy index to apply to the box.

    Returns (box_start, box_shape, view_index, compact): `compact` says the view skips elements
    of the box (a step other than ±1), so the result should be copied to free the box.
    """
    box_start, box_shape, view = [], [], []
    compact = False
    axis = 0
    for item in _expand_key(key, len(shape)):
        if item is None:
            view.append(None)
            continue
        size = shape[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            count = len(range(start, stop, step))
            if count == 0:
                box_start.append(0)
                box_shape.append(0)
            elif step > 0:
                box_start.append(start)
                box_shape.append((count - 1) * step + 1)
            else:
                low = start + (count - 1) * step
                box_start.append(low)
                box_shape.append(start - low + 1)
            view.append(slice(None, None, step))
            compact = compact or (count > 1 and abs(step) > 1)
        elif _is_integer(item):
            box_start.append(_as_index(item, axis, size))
            box_shape.append(1)
            view.append(0)
        else:
            raise IndexError(f"{_BASIC_INDEX_HELP}; got {type(item).__name__}")
        axis += 1
    # A trailing Ellipsis makes NumPy return a 0-d array rather than a scalar when every axis
    # is indexed by an integer, which is what zarr-python 3 returns too.
    return tuple(box_start), tuple(box_shape), tuple(view) + (Ellipsis,), compact


class Array:
    """A Zarr array opened by chute. Index it like a NumPy array to read.

    With `decode_cf=True` reads are decoded as xarray decodes them (see chute._cf): fill values
    become NaN, scale_factor/add_offset are applied, times become numpy.datetime64[ns]; `dtype`
    is then the decoded dtype and `raw_dtype` the stored one.
    """

    __slots__ = ("_attrs", "_core", "_decoder", "_dtype", "_raw_dtype", "_recipe", "_shape")

    def __init__(self, core: Any, decode_cf: bool = False):
        self._core = core
        self._recipe: _pickling.Recipe | None = None  # how it was opened (see _pickling)
        self._raw_dtype = _numpy_dtype(core)
        self._dtype = self._raw_dtype
        self._shape = tuple(core.shape)
        self._attrs: dict | None = None
        self._decoder = None
        if decode_cf:
            from ._cf import CfDecoder

            decoder = CfDecoder(self)
            if decoder.active:
                self._decoder = decoder
                self._dtype = decoder.dtype

    def _remember(self, recipe: _pickling.Recipe) -> None:
        self._recipe = recipe

    def __reduce__(self) -> tuple:
        """Pickled as the call that opened it, made again where it is unpickled."""
        return _pickling.reduce(self, self._recipe)

    def __copy__(self) -> Array:
        other = Array.__new__(Array)
        for slot in Array.__slots__:
            setattr(other, slot, getattr(self, slot))
        return other

    @property
    def path(self) -> str:
        """The path the array was opened from (used in error messages)."""
        return self._core.path

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The element type of reads in native byte order (decoded when opened with decode_cf)."""
        return self._dtype

    @property
    def raw_dtype(self) -> np.dtype:
        """The stored element type (native byte order)."""
        return self._raw_dtype

    @property
    def dims(self) -> tuple[str, ...]:
        """The dimension names (`_ARRAY_DIMENSIONS` / `dimension_names`), "dim_<i>" if unnamed."""
        names = self.dimension_names or ("",) * self.ndim
        return tuple(name or f"dim_{i}" for i, name in enumerate(names))

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape of the grid (for sharded arrays: the shard shape)."""
        return tuple(self._core.chunks)

    @property
    def read_chunks(self) -> tuple[int, ...]:
        """The unit chunks are read in: the chunk shape, or the inner chunk shape if sharded."""
        return tuple(self._core.read_chunks)

    @property
    def fill_value(self) -> Any:
        """The fill value as a NumPy scalar of the array's dtype (a null fill value reads as 0)."""
        raw = self._core.fill_value_bytes
        return np.frombuffer(raw, dtype=self._raw_dtype, count=1)[0]

    @property
    def attrs(self) -> dict:
        """The user attributes (.zattrs or zarr.json attributes; HDF5 attributes). Numeric HDF5
        and NetCDF-4 attributes come as NumPy values of their stored type, as netCDF4-python
        gives them (a float32 scale_factor is a numpy.float32; several values an array)."""
        if self._attrs is None:
            attrs = json.loads(self._core.attrs_json)
            for name, dtype in self._core.attribute_types.items():
                value = attrs.get(name)
                if isinstance(value, list):
                    typed = np.array(value, dtype=dtype).astype(np.dtype(dtype).newbyteorder("="))
                    attrs[name] = typed[0] if typed.size == 1 else typed
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    attrs[name] = np.dtype(dtype).newbyteorder("=").type(value)
            self._attrs = attrs
        return self._attrs

    @property
    def dimension_names(self) -> tuple[str, ...] | None:
        """One name per axis ("" when unnamed), or None when the metadata names none."""
        names = self._core.dimension_names
        return tuple(names) if names else None

    @property
    def zarr_format(self) -> int:
        """2 or 3 for a Zarr array, 0 for other formats."""
        return self._core.zarr_format

    @property
    def format(self) -> str:
        """The format the array was opened from: "zarr", "hdf5" (HDF5 and NetCDF-4) or "npy"."""
        return self._core.format

    @property
    def codecs(self) -> str:
        """The codec chain, e.g. "bytes(little) | blosc(lz4, shuffle, clevel 5)"."""
        return self._core.codecs

    @property
    def cache_stats(self) -> dict | None:
        """Node-local cache counters (hits, misses, bytes_from_cache, bytes_fetched,
        bytes_written, evicted, discarded) when opened with `cache=`, else None."""
        return self._core.cache_stats

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d chute.Array")
        return self._shape[0]

    def __repr__(self) -> str:
        return (
            f"<chute.Array {self.path!r} shape={self._shape} dtype={self._dtype} "
            f"chunks={self.chunks}>"
        )

    def read(self, start: Sequence[int], shape: Sequence[int]) -> np.ndarray:
        """Reads the box [start, start + shape) into a new C-contiguous NumPy array."""
        decoder = self._decoder
        if decoder is not None and decoder.fused:  # decoded as each chunk is placed
            out = np.empty(tuple(shape), dtype=self._dtype)
            decoder.read_into(self._core, list(start), out)
            return out
        out = np.empty(tuple(shape), dtype=self._raw_dtype)
        self._core.read_into(list(start), _as_raw(out))
        return out if decoder is None else decoder.decode(out)

    def read_into(self, start: Sequence[int], out: np.ndarray) -> np.ndarray:
        """Reads the box [start, start + out.shape) into `out` (any non-negative strides)."""
        if out.dtype != self._dtype:
            raise TypeError(f"expected an output array of dtype {self._dtype}, got {out.dtype}")
        if self._decoder is not None:
            if self._decoder.fused and all(stride >= 0 for stride in out.strides):
                self._decoder.read_into(self._core, list(start), out)
            else:
                out[...] = self.read(start, out.shape)
            return out
        self._core.read_into(list(start), _as_raw(out))
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        start, shape, view, compact = plan_basic_index(key, self._shape)
        result = self.read(start, shape)[view]
        return np.ascontiguousarray(result) if compact else result

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        data = self.read((0,) * self.ndim, self._shape)
        return data if dtype is None else data.astype(dtype, copy=False)

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(len(self)):
            yield self[i]


class Group(Mapping):
    """A Zarr group or HDF5 file/group: a read-only mapping of member path (relative to the
    group) to Array, or StringArray for an HDF5 string variable (read when asked for).

    Arrays of nested groups appear under their relative path ("sub/x").
    """

    def __init__(self, info: dict, decode_cf: bool = False):
        self._path = info["name"]
        self._zarr_format = info["zarr_format"]
        self._format = info["format"]
        self._attrs = json.loads(info["attrs_json"])
        self._groups = tuple(info["groups"])
        self._unsupported = dict(info.get("unsupported", {}))
        self._decode_cf = decode_cf
        self._strings = tuple(info.get("strings", ()))
        self._arrays = {
            name: Array(core, decode_cf) for name, core in sorted(info["arrays"].items())
        }
        # Files joined along time: the member paths in time order, and the first time index of
        # each run of members without a gap between them.
        self.members: tuple[str, ...] = tuple(info.get("members", ()))
        self.segments: tuple[int, ...] = tuple(info.get("segments", (0,)))
        self._recipe: _pickling.Recipe | None = None

    def _remember(self, recipe: _pickling.Recipe) -> None:
        self._recipe = recipe
        for name, array in self._arrays.items():  # a member: the group opened again, indexed
            array._remember((_pickling.member_of, (recipe, name), {}))

    def __reduce__(self) -> tuple:
        """Pickled as the call that opened it, made again where it is unpickled."""
        return _pickling.reduce(self, self._recipe)

    def __copy__(self) -> Group:
        return _pickling.shallow_copy(self)

    @property
    def path(self) -> str:
        return self._path

    @property
    def zarr_format(self) -> int:
        """2 or 3 for a Zarr group, 0 for other formats."""
        return self._zarr_format

    @property
    def format(self) -> str:
        """The format the group was opened from: "zarr" or "hdf5" (HDF5 and NetCDF-4)."""
        return self._format

    @property
    def attrs(self) -> dict:
        return self._attrs

    @property
    def groups(self) -> tuple[str, ...]:
        """The member groups (relative paths)."""
        return self._groups

    @property
    def unsupported(self) -> dict[str, str]:
        """Members that are not arrays chute reads (compound or reference datasets), with the
        reason; they are not in the mapping and stop nothing else."""
        return dict(self._unsupported)

    @property
    def strings(self) -> tuple[str, ...]:
        """The members that are string variables (each a StringArray in the mapping)."""
        return self._strings

    def __getitem__(self, name: str) -> Array | StringArray:
        try:
            return self._arrays[name]
        except KeyError:
            if name in self._strings:
                strings = open_strings(_native_path(f"{self._path}/{name}"), self._decode_cf)
                if strings is not None:
                    return strings
            if name in self._unsupported:
                raise _chute.UnsupportedError(self._unsupported[name]) from None
            raise KeyError(f"{name!r} is not an array of group {self._path!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._arrays or name in self._strings

    def __iter__(self) -> Iterator[str]:
        return iter(sorted([*self._arrays, *self._strings]))

    def __len__(self) -> int:
        return len(self._arrays) + len(self._strings)

    def __repr__(self) -> str:
        return f"<chute.Group {self._path!r} arrays={list(self)}>"


def _native_path(path: str | bytes | os.PathLike) -> bytes:
    """The path as the OS sees it: names need not be UTF-8 (bytes, or str from os.fsdecode)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise _chute.InvalidArgumentError(
            f"path must be a str, bytes or os.PathLike, got {type(path).__name__} {path!r}"
        )
    return os.fsencode(path)


@contextlib.contextmanager
def symlink_policy(follow_symlinks: bool | None) -> Iterator[None]:
    """Stores opened inside the block on this thread follow symbolic links or not
    (`follow_symlinks`); None keeps the process-wide `chute.set_follow_symlinks` choice."""
    if follow_symlinks is None:
        yield
        return
    scope = _chute._FileStoreScope()
    scope.enter(_flag("follow_symlinks", follow_symlinks))
    try:
        yield
    finally:
        scope.exit()


def _cache_args(cache: str | os.PathLike | None, cache_size: int | None) -> tuple[bytes, int]:
    """(folder, size limit) for the core: b"" and 0 mean no cache and the default limit. Both
    are checked in C++ (chute.CacheOptions' table; cache_size needs a cache)."""
    return _chute._cache_args(cache, cache_size)


@_pickling.remembered
def open(
    path: str | bytes | os.PathLike,
    decode_cf: bool = False,
    *,
    follow_symlinks: bool | None = None,
    cache: str | os.PathLike | None = None,
    cache_size: int | None = None,
) -> Array:
    """Opens the array at `path`: a Zarr v2 or v3 array folder (or "group/member"), an HDF5
    dataset ("file.h5/dataset/path") or a NumPy .npy file.

    decode_cf=True decodes reads as xarray does (fill values -> NaN, scale_factor/add_offset,
    times -> datetime64); off by default, as in zarr-python. follow_symlinks=False confines
    every read of this array to its folder (a key through a symbolic link is a
    PermissionDeniedError); None: the process-wide `chute.set_follow_symlinks` (default True).

    cache="/local/dir" keeps the stored bytes of every chunk read in that folder (at most
    `cache_size` bytes, default 16 GiB) so later reads come from local disk (see
    docs/storage/node-cache.md). `Array.cache_stats` reports its hits and misses.
    """
    decode_cf = _flag("decode_cf", decode_cf)
    cache_args = _cache_args(cache, cache_size)
    _references.prepare(path)
    with symlink_policy(follow_symlinks):
        try:
            return Array(_chute._open_array(_native_path(path), *cache_args), decode_cf)
        except _chute.InvalidArgumentError:
            # A string variable is read whole as a StringArray; anything else re-raises.
            strings = open_strings(_native_path(path), decode_cf)
            if strings is None:
                raise
            return strings


def _is_many(path: Any) -> bool:
    """A list of stores, or a glob pattern: files joined along time."""
    if isinstance(path, (list, tuple)):
        return True
    if isinstance(path, (str, bytes, os.PathLike)):
        text = os.fsdecode(path)
        return any(c in text for c in "*?[") and not os.path.exists(text)
    return False


def _many_paths(path: Any) -> list[bytes]:
    items = list(path) if isinstance(path, (list, tuple)) else [path]
    if not items:
        raise _invalid("a list of stores needs at least one path")
    return [_native_path(p) for p in items]


def _seconds(step: Any, name: str) -> int:
    """A step ("6h", numpy.timedelta64, datetime.timedelta or integer seconds) in seconds."""
    if isinstance(step, (int, np.integer)) and not isinstance(step, bool):
        seconds = int(step)
    else:
        from ._weather import as_timedelta

        seconds = int(as_timedelta(step, name) / np.timedelta64(1, "s"))
    if seconds <= 0:
        raise _invalid(f"{name} must be a positive time step, got {step!r}")
    return seconds


def open_many(
    paths: Any,
    *,
    concat_dim: str = "time",
    allow_gaps: bool = False,
    file_pattern: str | None = None,
    file_step: Any = None,
    channels: Sequence[str] | None = None,
    channel_array: str = "fields",
    or_by_name: bool = False,
    cache_args: tuple = (b"", 0),
) -> dict:
    """The core's joined group (see open_group)."""
    if (file_pattern is None) != (file_step is None):
        raise _invalid("file_pattern and file_step go together (members' times from their names)")
    files = _many_paths(paths)
    for p in files:
        _references.prepare(p)
    info = _chute._open_many(
        files,
        str(concat_dim),
        _flag("allow_gaps", allow_gaps),
        "" if file_pattern is None else str(file_pattern),
        0 if file_step is None else _seconds(file_step, "file_step"),
        [str(c) for c in (channels or [])],
        str(channel_array),
        bool(or_by_name),
        *cache_args,
    )
    return info


@_pickling.remembered
def open_group(
    path: str | bytes | os.PathLike | Sequence[str | os.PathLike],
    decode_cf: bool = False,
    *,
    concat_dim: str = "time",
    allow_gaps: bool = False,
    file_pattern: str | None = None,
    file_step: Any = None,
    channels: Sequence[str] | None = None,
    channel_array: str = "fields",
    follow_symlinks: bool | None = None,
    cache: str | os.PathLike | None = None,
    cache_size: int | None = None,
) -> Group:
    """Opens the Zarr v2 or v3 group at `path` with all its arrays (consolidated if available),
    an HDF5 file or group ("file.h5", "file.h5/group"), or a Zarr reference set (a kerchunk
    JSON file, or a Parquet reference folder when pyarrow is installed).

    A list of paths or a glob pattern ("era5/*.nc") opens many files as one group joined along
    `concat_dim` (see docs/many-files.md): members are ordered by their times and checked
    (same variables, dims, dtypes and grid; no overlap; no gap unless `allow_gaps`); each
    variable reads across members as one array. Members without a time coordinate take their
    times from `file_pattern` ("{year}.h5") and `file_step` ("6h"); `channels` names the
    channels (axis 1) of the stacked array `channel_array`, each becoming a variable.

    decode_cf=True opens every array with CF decoding (see `open`); follow_symlinks as in `open`;
    `cache`, `cache_size`: the node-local cache of `open`, shared by all arrays of the group.
    """
    decode_cf = _flag("decode_cf", decode_cf)
    cache_args = _cache_args(cache, cache_size)
    many = _is_many(path) or file_pattern is not None or channels is not None
    with symlink_policy(follow_symlinks):
        if many:
            info = open_many(
                path, concat_dim=concat_dim, allow_gaps=allow_gaps, file_pattern=file_pattern,
                file_step=file_step, channels=channels, channel_array=channel_array,
                cache_args=cache_args,
            )  # fmt: skip
            return Group(info, decode_cf)
        _references.prepare(path)
        return Group(_chute._open_group(_native_path(path), *cache_args), decode_cf)
