"""chute: training batches from chunked scientific arrays"""

from collections.abc import Mapping, Sequence
import os
from typing import Annotated, Literal

from numpy.typing import NDArray

from chute import (
    CancelledError as CancelledError,
    CorruptDataError as CorruptDataError,
    Error as Error,
    InternalError as InternalError,
    InvalidArgumentError as InvalidArgumentError,
    InvalidMetadataError as InvalidMetadataError,
    NotFoundError as NotFoundError,
    OutOfRangeError as OutOfRangeError,
    PermissionDeniedError as PermissionDeniedError,
    ReadTimeoutError as ReadTimeoutError,
    StorageError as StorageError,
    StoreUnavailableError as StoreUnavailableError,
    UnsupportedError as UnsupportedError
)


def set_follow_symlinks(follow: bool) -> None:
    """
    Whether arrays and loaders opened from now on follow symbolic links inside their folder (default True, as zarr-python); False confines every read to the folder opened.
    """

def get_follow_symlinks() -> bool:
    """
    Whether stores opened now follow symbolic links (see set_follow_symlinks).
    """

class _FileStoreScope:
    def __init__(self) -> None: ...

    def enter(self, arg: bool, /) -> None: ...

    def exit(self) -> None: ...

class _Array:
    """An opened array of the core; use chute.Array instead."""

    @property
    def path(self) -> str: ...

    @property
    def shape(self) -> list[int]: ...

    @property
    def chunks(self) -> list[int]: ...

    @property
    def read_chunks(self) -> list[int]: ...

    @property
    def dtype_str(self) -> str: ...

    @property
    def dtype_name(self) -> str: ...

    @property
    def fill_value_bytes(self) -> bytes: ...

    @property
    def fill_value_null(self) -> bool: ...

    @property
    def attrs_json(self) -> str: ...

    @property
    def attribute_types(self) -> dict: ...

    @property
    def dimension_names(self) -> list[str]: ...

    @property
    def zarr_format(self) -> int: ...

    @property
    def format(self) -> str: ...

    @property
    def codec_specs(self) -> list: ...

    @property
    def codecs(self) -> str: ...

    @property
    def cache_stats(self) -> object: ...

    def storage_key(self, arg: Sequence[int], /) -> str: ...

    def decode_cf_times(self) -> list[int]:
        """
        The CF time coordinate decoded in C++ (units, calendar, scale/offset, fill values): int64 seconds since 1970-01-01 UTC, INT64_MIN (NaT) where missing.
        """

    def read_into(self, start: Sequence[int], out: Annotated[NDArray, dict(device='cpu')]) -> None:
        """
        Reads box [start, start + out.shape) into the NumPy array `out` (GIL released).
        """

    def read_decoded_into(self, start: Sequence[int], out: Annotated[NDArray, dict(device='cpu')], scale: float | None, offset: float | None, missing: Sequence[float]) -> None:
        """
        read_into() decoding CF values as each chunk is placed into the float32/float64 `out`: values in `missing` -> NaN, the others × scale then + offset (each unless None).
        """

def _open_array(path: bytes, cache: bytes = ..., cache_size: int = 0) -> _Array: ...

def _open_strings(path: bytes) -> object: ...

def _open_group(path: bytes, cache: bytes = ..., cache_size: int = 0) -> dict: ...

def _open_many(paths: Sequence[bytes], concat_dim: str, allow_gaps: bool, file_pattern: str, step_seconds: int, channels: Sequence[str], channel_array: str, or_by_name: bool = False, cache: bytes = ..., cache_size: int = 0) -> dict:
    """
    Opens files (paths or glob patterns) joined along one dimension (many_files.h).
    """

def _register_references(location: str, keys: Sequence[str], urls: Sequence[str], offsets: Sequence[int], lengths: Sequence[int], inline_values: Sequence[bytes]) -> None:
    """
    Registers a reference set read by the Python layer (Parquet) under `location`.
    """

def _is_group(path: bytes) -> bool: ...

def _max_reader_threads() -> int: ...

def set_threads(threads: int) -> None:
    """
    Sets the number of threads array reads use (0: one per CPU this process may run on).
    """

def get_threads() -> int:
    """The number of threads array reads use."""

class LoaderOptions:
    """Options of chute.Loader (sampling, threads, prefetch, ranks)."""

    def __init__(self, *, batch_size: int = 16, shuffle: bool | Literal["chunks"] = True, seed: int | None = 0, drop_last: bool = False, threads: int | None = None, prefetch: int = 2, io_concurrency: int | None = None, read_ahead: bool = True, rank: int | None = None, world_size: int | None = None, pad_to_batch: bool = False, timeout: float | None = None, shuffle_block: int | None = None, shuffle_window: int = 4, indices: Sequence[int] | None = None, pin_memory: bool = False, device: str | Any | None = None) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def batch_size(self, /) -> int:
        """samples per batch, per rank"""

    @batch_size.setter
    def batch_size(self, value: int, /) -> None: ...

    @property
    def shuffle(self, /) -> bool | Literal["chunks"]:
        """
        shuffle the samples of every epoch (Python also takes "chunks": shuffle stored chunks, then samples within `shuffle_window` of them)
        """

    @shuffle.setter
    def shuffle(self, value: bool | Literal["chunks"], /) -> None: ...

    @property
    def seed(self, /) -> int | None:
        """
        seed of the shuffle; batches are a pure function of (seed, epoch, rank, world_size, batch)
        """

    @seed.setter
    def seed(self, value: int | None, /) -> None: ...

    @property
    def drop_last(self, /) -> bool:
        """
        drop the incomplete last batch; else it is padded by wrapping around (`batch.padding`)
        """

    @drop_last.setter
    def drop_last(self, value: bool, /) -> None: ...

    @property
    def threads(self, /) -> int | None:
        """reader/decoder threads"""

    @threads.setter
    def threads(self, value: int | None, /) -> None: ...

    @property
    def prefetch(self, /) -> int:
        """batches assembled ahead of the consumer"""

    @prefetch.setter
    def prefetch(self, value: int, /) -> None: ...

    @property
    def io_concurrency(self, /) -> int | None:
        """chunk reads kept in flight while the threads decode"""

    @io_concurrency.setter
    def io_concurrency(self, value: int | None, /) -> None: ...

    @property
    def read_ahead(self, /) -> bool:
        """plan the next batch and submit its chunk reads before this one decodes"""

    @read_ahead.setter
    def read_ahead(self, value: bool, /) -> None: ...

    @property
    def rank(self, /) -> int | None:
        """this process's rank"""

    @rank.setter
    def rank(self, value: int | None, /) -> None: ...

    @property
    def world_size(self, /) -> int | None:
        """number of ranks sharing each epoch"""

    @world_size.setter
    def world_size(self, value: int | None, /) -> None: ...

    @property
    def pad_to_batch(self, /) -> bool:
        """
        allow batch_size x world_size above the sample count (the one batch wraps around)
        """

    @pad_to_batch.setter
    def pad_to_batch(self, value: bool, /) -> None: ...

    @property
    def timeout(self, /) -> float | None:
        """
        seconds to wait for a batch before raising ReadTimeoutError and cancelling the epoch
        """

    @timeout.setter
    def timeout(self, value: float | None, /) -> None: ...

    @property
    def shuffle_block(self, /) -> int | None:
        """
        samples per stored chunk for the chunk-aware shuffle (shuffle="chunks")
        """

    @shuffle_block.setter
    def shuffle_block(self, value: int | None, /) -> None: ...

    @property
    def shuffle_window(self, /) -> int:
        """chunk-aware shuffle: chunks whose samples are shuffled together"""

    @shuffle_window.setter
    def shuffle_window(self, value: int, /) -> None: ...

    @property
    def indices(self, /) -> Sequence[int] | None:
        """
        the sample numbers an epoch draws from (a subset, a stride, an order; shuffle=False keeps it)
        """

    @indices.setter
    def indices(self, value: Sequence[int] | None, /) -> None: ...

    @property
    def pin_memory(self, /) -> bool:
        """
        page-locked (CUDA) batch buffers: a framework's non_blocking copy to the GPU is one DMA from them (an error without a CUDA driver and GPU)
        """

    @pin_memory.setter
    def pin_memory(self, value: bool, /) -> None: ...

    @property
    def device(self, /) -> str | Any | None:
        """
        copy each batch to this GPU ("cuda", "cuda:N", a torch.device or a JAX GPU device) on chute's own stream as soon as it is assembled; `prefetch` then counts device batches
        """

    @device.setter
    def device(self, value: str | Any | None, /) -> None: ...

    def validate(self) -> None:
        """
        Checks the fields together (each was checked when set): what the core checks first.
        """

    def __repr__(self) -> str: ...

    @staticmethod
    def _fields() -> list:
        """
        Every field of the table: name, type (a Python annotation), default, help, none (what None means, '' if refused), low/high, choices, non_empty, internal.
        """

class WindowOptions:
    """Options of chute.windows() (variables, steps, normalisation)."""

    def __init__(self, *, variables: Sequence[str] = (), target_variables: Sequence[str] | None = None, forcings: Sequence[str] = (), computed_forcings: Sequence[str] = (), statics: Sequence[str] = (), levels: Sequence[float] | None = None, level_indices: Sequence[int] | None = None, input_offsets: Sequence[int] = (-1, 0), target_offsets: Sequence[int] = (1,), channels_last: bool = True, dtype: Literal["float32", "float16", "bfloat16"] = 'float32', decode_cf: bool = True, nan_mask: bool = False, mean: Sequence[float] | None = None, std: Sequence[float] | None = None, mean_suffix: str = '', std_suffix: str = '', statistics: str | os.PathLike[str] | None = None, masked_points: Literal["error", "nan"] = 'error', std_floor: float = 0.0, level_coordinate: str = 'level', nan: Literal["keep", "error", "fill"] = 'keep', nan_value: float = 0.0, time_start: int = 0, time_stop: int = -1, sample_stride: int = 1, sample_times: Sequence[int] = (), time_map: Sequence[int] = (), time_seconds: Sequence[int] = (), lat_values: Sequence[float] = (), lon_values: Sequence[float] = (), lat_start: int = 0, lat_stop: int = -1, lon_start: int = 0, lon_stop: int = -1) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def variables(self, /) -> Sequence[str]:
        """input variables, in channel order"""

    @variables.setter
    def variables(self, value: Sequence[str], /) -> None: ...

    @property
    def target_variables(self, /) -> Sequence[str] | None:
        """variables of "targets\""""

    @target_variables.setter
    def target_variables(self, value: Sequence[str] | None, /) -> None: ...

    @property
    def forcings(self, /) -> Sequence[str]:
        """variables read at the target steps, appended to the inputs"""

    @forcings.setter
    def forcings(self, value: Sequence[str], /) -> None: ...

    @property
    def computed_forcings(self, /) -> Sequence[str]:
        """
        cos_local_time, sin_local_time, cos_day_of_year, sin_day_of_year, toa_radiation: computed at the target steps, after the stored forcings (not normalised)
        """

    @computed_forcings.setter
    def computed_forcings(self, value: Sequence[str], /) -> None: ...

    @property
    def statics(self, /) -> Sequence[str]:
        """2-D (lat, lon) fields appended to the inputs once"""

    @statics.setter
    def statics(self, value: Sequence[str], /) -> None: ...

    @property
    def levels(self, /) -> Sequence[float] | None:
        """values of the level coordinate to read"""

    @levels.setter
    def levels(self, value: Sequence[float] | None, /) -> None: ...

    @property
    def level_indices(self, /) -> Sequence[int] | None:
        """positions along the level axis to read"""

    @level_indices.setter
    def level_indices(self, value: Sequence[int] | None, /) -> None: ...

    @property
    def input_offsets(self, /) -> Sequence[int]:
        """input steps, in store steps from the sample's time"""

    @input_offsets.setter
    def input_offsets(self, value: Sequence[int], /) -> None: ...

    @property
    def target_offsets(self, /) -> Sequence[int]:
        """target steps, in store steps"""

    @target_offsets.setter
    def target_offsets(self, value: Sequence[int], /) -> None: ...

    @property
    def channels_last(self, /) -> bool:
        """outputs (lat, lon, channels), else (channels, lat, lon)"""

    @channels_last.setter
    def channels_last(self, value: bool, /) -> None: ...

    @property
    def dtype(self, /) -> Literal["float32", "float16", "bfloat16"]:
        """the outputs' dtype"""

    @dtype.setter
    def dtype(self, value: Literal["float32", "float16", "bfloat16"], /) -> None: ...

    @property
    def decode_cf(self, /) -> bool:
        """CF decoding: fill values -> NaN, scale_factor/add_offset"""

    @decode_cf.setter
    def decode_cf(self, value: bool, /) -> None: ...

    @property
    def nan_mask(self, /) -> bool:
        """
        append a channel per input channel: 1 where the value was missing ("<channel>/mask")
        """

    @nan_mask.setter
    def nan_mask(self, value: bool, /) -> None: ...

    @property
    def mean(self, /) -> Sequence[float] | None:
        """normalisation: one mean per channel of one step of the inputs"""

    @mean.setter
    def mean(self, value: Sequence[float] | None, /) -> None: ...

    @property
    def std(self, /) -> Sequence[float] | None:
        """normalisation: one standard deviation per channel (> 0)"""

    @std.setter
    def std(self, value: Sequence[float] | None, /) -> None: ...

    @property
    def mean_suffix(self, /) -> str:
        """
        normalise with the arrays named variable + suffix ("mean/{}": a pattern)
        """

    @mean_suffix.setter
    def mean_suffix(self, value: str, /) -> None: ...

    @property
    def std_suffix(self, /) -> str:
        """the same for the standard deviations"""

    @std_suffix.setter
    def std_suffix(self, value: str, /) -> None: ...

    @property
    def statistics(self, /) -> str | os.PathLike[str] | None:
        """
        a group written by `chute stats`: normalise with its mean/<v> and std/<v>
        """

    @statistics.setter
    def statistics(self, value: str | os.PathLike[str] | None, /) -> None: ...

    @property
    def masked_points(self, /) -> Literal["error", "nan"]:
        """
        a read point whose statistics are not finite or std <= 0: an error, or NaN values
        """

    @masked_points.setter
    def masked_points(self, value: Literal["error", "nan"], /) -> None: ...

    @property
    def std_floor(self, /) -> float:
        """raise every finite std below it to it"""

    @std_floor.setter
    def std_floor(self, value: float, /) -> None: ...

    @property
    def level_coordinate(self, /) -> str:
        """the coordinate array of levels when not named like the level dimension"""

    @level_coordinate.setter
    def level_coordinate(self, value: str, /) -> None: ...

    @property
    def nan(self, /) -> Literal["keep", "error", "fill"]:
        """missing values"""

    @nan.setter
    def nan(self, value: Literal["keep", "error", "fill"], /) -> None: ...

    @property
    def nan_value(self, /) -> float:
        """the value replacing missing ones (finite with nan = fill)"""

    @nan_value.setter
    def nan_value(self, value: float, /) -> None: ...

    @property
    def time_start(self, /) -> int:
        """first time index of the windows"""

    @time_start.setter
    def time_start(self, value: int, /) -> None: ...

    @property
    def time_stop(self, /) -> int:
        """time index the windows stay before (-1: the end)"""

    @time_stop.setter
    def time_stop(self, value: int, /) -> None: ...

    @property
    def sample_stride(self, /) -> int:
        """time steps between samples"""

    @sample_stride.setter
    def sample_stride(self, value: int, /) -> None: ...

    @property
    def sample_times(self, /) -> Sequence[int]:
        """the samples' time indices"""

    @sample_times.setter
    def sample_times(self, value: Sequence[int], /) -> None: ...

    @property
    def time_map(self, /) -> Sequence[int]:
        """store time index of each step of a regular axis"""

    @time_map.setter
    def time_map(self, value: Sequence[int], /) -> None: ...

    @property
    def time_seconds(self, /) -> Sequence[int]:
        """seconds since 1970 of every time index"""

    @time_seconds.setter
    def time_seconds(self, value: Sequence[int], /) -> None: ...

    @property
    def lat_values(self, /) -> Sequence[float]:
        """degrees of every grid row"""

    @lat_values.setter
    def lat_values(self, value: Sequence[float], /) -> None: ...

    @property
    def lon_values(self, /) -> Sequence[float]:
        """degrees of every grid column"""

    @lon_values.setter
    def lon_values(self, value: Sequence[float], /) -> None: ...

    @property
    def lat_start(self, /) -> int:
        """first latitude row read"""

    @lat_start.setter
    def lat_start(self, value: int, /) -> None: ...

    @property
    def lat_stop(self, /) -> int:
        """latitude row the read stops before (-1: the end)"""

    @lat_stop.setter
    def lat_stop(self, value: int, /) -> None: ...

    @property
    def lon_start(self, /) -> int:
        """first longitude column read"""

    @lon_start.setter
    def lon_start(self, value: int, /) -> None: ...

    @property
    def lon_stop(self, /) -> int:
        """longitude column the read stops before (-1: the end)"""

    @lon_stop.setter
    def lon_stop(self, value: int, /) -> None: ...

    def validate(self) -> None:
        """
        Checks the fields together (each was checked when set): what the core checks first.
        """

    def __repr__(self) -> str: ...

    @staticmethod
    def _fields() -> list:
        """
        Every field of the table: name, type (a Python annotation), default, help, none (what None means, '' if refused), low/high, choices, non_empty, internal.
        """

class CropOptions:
    """Options of chute.crops() (size, channel axis, transforms)."""

    def __init__(self, *, size: int | Sequence[int] = (64,), channel_axis: int | None = 0, crops_per_epoch: int = 4096, transforms: Literal["none", "rotations", "symmetries"] | None = None, channels_last: bool = False) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def size(self, /) -> int | Sequence[int]:
        """crop extent: one value for every spatial axis, or one per axis"""

    @size.setter
    def size(self, value: int | Sequence[int], /) -> None: ...

    @property
    def channel_axis(self, /) -> int | None:
        """the axis holding channels in every array (negative: from the end)"""

    @channel_axis.setter
    def channel_axis(self, value: int | None, /) -> None: ...

    @property
    def crops_per_epoch(self, /) -> int:
        """crops in one epoch"""

    @crops_per_epoch.setter
    def crops_per_epoch(self, value: int, /) -> None: ...

    @property
    def transforms(self, /) -> Literal["none", "rotations", "symmetries"] | None:
        """
        "rotations" (the cube's 24 right-angle rotations), "symmetries" (all 48, with reflections) or "none", one id per crop applied while it is placed
        """

    @transforms.setter
    def transforms(self, value: Literal["none", "rotations", "symmetries"] | None, /) -> None: ...

    @property
    def channels_last(self, /) -> bool:
        """outputs (*size, C) instead of (C, *size), whatever the stored layout"""

    @channels_last.setter
    def channels_last(self, value: bool, /) -> None: ...

    def validate(self) -> None:
        """
        Checks the fields together (each was checked when set): what the core checks first.
        """

    def __repr__(self) -> str: ...

    @staticmethod
    def _fields() -> list:
        """
        Every field of the table: name, type (a Python annotation), default, help, none (what None means, '' if refused), low/high, choices, non_empty, internal.
        """

class CacheOptions:
    """The node-local cache of chute.open(), packed(), windows(), crops()."""

    def __init__(self, *, cache: str | os.PathLike[str] | None = None, cache_size: int | None = None, cache_fsync: bool = False) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def cache(self, /) -> str | os.PathLike[str] | None:
        """
        node-local cache folder: the stored bytes of every chunk read are kept there, so later runs read them locally
        """

    @cache.setter
    def cache(self, value: str | os.PathLike[str] | None, /) -> None: ...

    @property
    def cache_size(self, /) -> int | None:
        """size limit of the cache folder in bytes"""

    @cache_size.setter
    def cache_size(self, value: int | None, /) -> None: ...

    @property
    def cache_fsync(self, /) -> bool:
        """fsync each entry before renaming it into place"""

    @cache_fsync.setter
    def cache_fsync(self, value: bool, /) -> None: ...

    def validate(self) -> None:
        """
        Checks the fields together (each was checked when set): what the core checks first.
        """

    def __repr__(self) -> str: ...

    @staticmethod
    def _fields() -> list:
        """
        Every field of the table: name, type (a Python annotation), default, help, none (what None means, '' if refused), low/high, choices, non_empty, internal.
        """

class HttpOptions:
    """The HTTP client's settings (chute.set_http_options())."""

    def __init__(self, *, connect_timeout: float = 10.0, timeout: float = 300.0, stall_timeout: float = 30.0, stall_min_bytes_per_s: int = 1, max_retries: int = 5, backoff: float = 0.05, backoff_max: float = 5.0, max_in_flight: int = 64, coalesce_gap: int = 1048576, coalesce_max: int = 16777216, split_size: int = 16777216, verify_tls: bool = True) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def connect_timeout(self, /) -> float:
        """seconds to connect (TCP and TLS handshake)"""

    @connect_timeout.setter
    def connect_timeout(self, value: float, /) -> None: ...

    @property
    def timeout(self, /) -> float:
        """seconds per request attempt, start to last byte"""

    @timeout.setter
    def timeout(self, value: float, /) -> None: ...

    @property
    def stall_timeout(self, /) -> float:
        """
        seconds a transfer may stay below stall_min_bytes_per_s before it is aborted and retried
        """

    @stall_timeout.setter
    def stall_timeout(self, value: float, /) -> None: ...

    @property
    def stall_min_bytes_per_s(self, /) -> int:
        """bytes per second under which a transfer counts as stalled"""

    @stall_min_bytes_per_s.setter
    def stall_min_bytes_per_s(self, value: int, /) -> None: ...

    @property
    def max_retries(self, /) -> int:
        """retries of a failed request (timeouts, resets, short bodies, 429, 5xx)"""

    @max_retries.setter
    def max_retries(self, value: int, /) -> None: ...

    @property
    def backoff(self, /) -> float:
        """
        seconds of the first retry's backoff (full jitter, doubling per attempt)
        """

    @backoff.setter
    def backoff(self, value: float, /) -> None: ...

    @property
    def backoff_max(self, /) -> float:
        """seconds a retry's backoff may reach (>= backoff)"""

    @backoff_max.setter
    def backoff_max(self, value: float, /) -> None: ...

    @property
    def max_in_flight(self, /) -> int:
        """HTTP requests running at once in the whole process"""

    @max_in_flight.setter
    def max_in_flight(self, value: int, /) -> None: ...

    @property
    def coalesce_gap(self, /) -> int:
        """bytes between two ranges of one file read as one GET"""

    @coalesce_gap.setter
    def coalesce_gap(self, value: int, /) -> None: ...

    @property
    def coalesce_max(self, /) -> int:
        """largest read that coalescing makes, in bytes"""

    @coalesce_max.setter
    def coalesce_max(self, value: int, /) -> None: ...

    @property
    def split_size(self, /) -> int:
        """bytes above which one range goes out as parallel parts"""

    @split_size.setter
    def split_size(self, value: int, /) -> None: ...

    @property
    def verify_tls(self, /) -> bool:
        """check the server's TLS certificate and host name"""

    @verify_tls.setter
    def verify_tls(self, value: bool, /) -> None: ...

    def validate(self) -> None:
        """
        Checks the fields together (each was checked when set): what the core checks first.
        """

    def __repr__(self) -> str: ...

    @staticmethod
    def _fields() -> list:
        """
        Every field of the table: name, type (a Python annotation), default, help, none (what None means, '' if refused), low/high, choices, non_empty, internal.
        """

class StorageOptions:
    """Options of the s3:// and gs:// stores (chute.set_storage_options())."""

    def __init__(self, *, endpoint_url: str | None = None, region: str | None = None, profile: str | None = None, access_key_id: str | None = None, secret_access_key: str | None = None, session_token: str | None = None, token: str | None = None, anonymous: bool | None = None, addressing_style: Literal["path", "virtual"] | None = None) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def endpoint_url(self, /) -> str | None:
        """
        the server, e.g. "http://127.0.0.1:9000" for an S3-compatible one (path-style addressing)
        """

    @endpoint_url.setter
    def endpoint_url(self, value: str | None, /) -> None: ...

    @property
    def region(self, /) -> str | None:
        """the bucket's region (s3 only)"""

    @region.setter
    def region(self, value: str | None, /) -> None: ...

    @property
    def profile(self, /) -> str | None:
        """a section of ~/.aws/credentials or ~/.aws/config (s3 only)"""

    @profile.setter
    def profile(self, value: str | None, /) -> None: ...

    @property
    def access_key_id(self, /) -> str | None:
        """the access key (s3 only)"""

    @access_key_id.setter
    def access_key_id(self, value: str | None, /) -> None: ...

    @property
    def secret_access_key(self, /) -> str | None:
        """the secret of access_key_id (s3 only)"""

    @secret_access_key.setter
    def secret_access_key(self, value: str | None, /) -> None: ...

    @property
    def session_token(self, /) -> str | None:
        """a temporary credential's token (s3 only)"""

    @session_token.setter
    def session_token(self, value: str | None, /) -> None: ...

    @property
    def token(self, /) -> str | None:
        """an OAuth2 access token, sent as a bearer token (gs only)"""

    @token.setter
    def token(self, value: str | None, /) -> None: ...

    @property
    def anonymous(self, /) -> bool | None:
        """True: unsigned requests, no credentials looked up"""

    @anonymous.setter
    def anonymous(self, value: bool | None, /) -> None: ...

    @property
    def addressing_style(self, /) -> Literal["path", "virtual"] | None:
        """
        how the bucket is addressed: ENDPOINT/BUCKET (path) or BUCKET.ENDPOINT (virtual); s3 only
        """

    @addressing_style.setter
    def addressing_style(self, value: Literal["path", "virtual"] | None, /) -> None: ...

    def __repr__(self) -> str: ...

    @staticmethod
    def _fields() -> list:
        """
        Every field of the table: name, type (a Python annotation), default, help, none (what None means, '' if refused), low/high, choices, non_empty, internal.
        """

def _cache_args(cache: object | None, cache_size: object | None) -> tuple:
    """
    (folder as bytes, size limit) for the core, from chute.open's cache= and cache_size= (b"" and 0: no cache, the default limit); each is checked, and cache_size needs a cache.
    """

def _http_options() -> dict: ...

def _set_http_options(**kwargs) -> None:
    """
    Changes the named settings of the HTTP client (each checked; nothing changes on an error).
    """

def _storage_options(scheme: str) -> dict: ...

def _set_storage_options(scheme: str, **options) -> None:
    """Replaces the options of every `scheme` store opened afterwards."""

class _Dataset:
    """What a sample is; built by chute.packed() or chute.windows()."""

    @property
    def num_samples(self) -> int: ...

    def describe(self) -> str: ...

    def outputs(self) -> list: ...

class _WindowDataset(_Dataset):
    @property
    def first_time(self) -> int: ...

    @property
    def step_channels(self) -> int: ...

    def sample_time(self, sample: int) -> int: ...

    def channel_names(self, output: int) -> list[str]: ...

def _open_packed(paths: Sequence[tuple[str, bytes]], cache: bytes = ..., cache_size: int = 0) -> tuple[_Dataset, int]:
    """
    A packed dataset, and the most samples one read chunk holds along axis 0.
    """

def _open_windows(paths: Sequence[str], options: WindowOptions, cache: bytes = ..., cache_size: int = 0, joined_arrays: Mapping[str, _Array] | None = None, segments: Sequence[int] = []) -> _WindowDataset: ...

class _AnemoiDataset(_Dataset):
    @property
    def cells(self) -> int: ...

    @property
    def members(self) -> int: ...

    @property
    def stored_bytes_per_sample(self) -> int: ...

def _open_anemoi(sources: Sequence[_Array], source_names: Sequence[str], layouts: Sequence[tuple[Sequence[tuple[int, int, int]], Sequence[int]]], date_layout: Sequence[int], date_times: Sequence[int], date_time_offsets: Sequence[int], num_variables: int, members: Sequence[int], cell_begin: int, cell_end: int, sample_dates: Sequence[int], input_offsets: Sequence[int], target_offsets: Sequence[int], input_variables: Sequence[int], target_variables: Sequence[int], mul: Sequence[float], add: Sequence[float], variables_first: bool, dtype: str) -> _AnemoiDataset:
    """An anemoi dataset resolved by chute/_anemoi.py."""

class _CropDataset(_Dataset):
    @property
    def transform_count(self) -> int: ...

    @property
    def grid(self) -> list[int]: ...

    @property
    def size(self) -> list[int]: ...

    def crop(self, seed: int, epoch: int, sample: int) -> tuple: ...

def _open_crops(arrays: Sequence[tuple[str, _Array]], options: CropOptions) -> _CropDataset: ...

def _cube_symmetries() -> list:
    """
    (axes, flips) of each cube symmetry id: y = np.flip(np.transpose(x, axes), flips).
    """

def _testing_delivery_seconds(device: str, nbytes: int, batches: int) -> float: ...

class _DeviceArray:
    """
    A batch array (in device or host memory), for DLPack consumers (torch.from_dlpack, jax.numpy.from_dlpack).
    """

    @property
    def shape(self) -> tuple: ...

    @property
    def dtype(self) -> str: ...

    @property
    def device(self) -> str: ...

    @property
    def nbytes(self) -> int: ...

    def __dlpack_device__(self) -> tuple: ...

    def __dlpack__(self, *, stream: object | None = None, max_version: object | None = None, dl_device: object | None = None, copy: object | None = None) -> object:
        """
        DLPack export: the consumer's `stream` is ordered after chute's copy (an event, no synchronisation of the device).
        """

    def __repr__(self) -> str: ...

class _Loader:
    """The core loader; use chute.Loader instead."""

    def __init__(self, dataset: _Dataset, options: LoaderOptions) -> None: ...

    @property
    def options(self) -> LoaderOptions: ...

    @property
    def batches_per_epoch(self) -> int: ...

    @property
    def threads(self) -> int: ...

    @property
    def num_samples(self) -> int: ...

    def begin_epoch(self, epoch: int | None = None, start_batch: int = 0) -> None: ...

    def next(self) -> object: ...

    def stop(self) -> None: ...

    def state(self) -> tuple: ...

    def restore(self, seed: int, epoch: int, next_batch: int, batch_size: int = 0, world_size: int = 0, dataset: int = 0) -> None: ...

    def stats(self) -> dict: ...

    def reset_stats(self) -> None: ...

def _http_shutdown() -> None: ...

def _http_running() -> bool: ...

class _Store:
    """A store, opaque (for chute_testing)."""

def _file_store(root: bytes) -> _Store:
    """The files under `root` as a store."""

def _packed_over_store(store: _Store, keys: Sequence[tuple[str, bytes]]) -> _Dataset:
    """
    A packed dataset of the Zarr arrays at `keys` (name, key in the store) of `store`.
    """

def _request_interrupt() -> None:
    """
    Marks an interruption pending, as Ctrl-C does: the open in progress, or the next long one, raises KeyboardInterrupt.
    """

def _set_leak_warnings(on: bool) -> None:
    """
    nanobind's report of objects still alive at exit (chute.__init__ turns it off when a daemon thread, which the interpreter never stops, may hold them).
    """
