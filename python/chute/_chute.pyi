"""chute: training batches from chunked scientific arrays"""

from collections.abc import Mapping, Sequence
from typing import Annotated

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
    def dimension_names(self) -> list[str]: ...

    @property
    def zarr_format(self) -> int: ...

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

def _open_group(path: bytes, cache: bytes = ..., cache_size: int = 0) -> dict: ...

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

    def __init__(self, **kwargs) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def batch_size(self) -> object:
        """samples per batch, per rank"""

    @batch_size.setter
    def batch_size(self, arg: object, /) -> None: ...

    @property
    def shuffle(self) -> object:
        """
        shuffle the samples of every epoch (Python also takes "chunks": shuffle stored chunks, then samples within `shuffle_window` of them)
        """

    @shuffle.setter
    def shuffle(self, arg: object, /) -> None: ...

    @property
    def seed(self) -> object:
        """
        seed of the shuffle; batches are a pure function of (seed, epoch, rank, world_size, batch)
        """

    @seed.setter
    def seed(self, arg: object, /) -> None: ...

    @property
    def drop_last(self) -> object:
        """
        drop the incomplete last batch; else it is padded by wrapping around (`batch.padding`)
        """

    @drop_last.setter
    def drop_last(self, arg: object, /) -> None: ...

    @property
    def threads(self) -> object:
        """reader/decoder threads"""

    @threads.setter
    def threads(self, arg: object, /) -> None: ...

    @property
    def prefetch(self) -> object:
        """batches assembled ahead of the consumer"""

    @prefetch.setter
    def prefetch(self, arg: object, /) -> None: ...

    @property
    def io_concurrency(self) -> object:
        """chunk reads kept in flight while the threads decode"""

    @io_concurrency.setter
    def io_concurrency(self, arg: object, /) -> None: ...

    @property
    def read_ahead(self) -> object:
        """plan the next batch and submit its chunk reads before this one decodes"""

    @read_ahead.setter
    def read_ahead(self, arg: object, /) -> None: ...

    @property
    def rank(self) -> object:
        """this process's rank"""

    @rank.setter
    def rank(self, arg: object, /) -> None: ...

    @property
    def world_size(self) -> object:
        """number of ranks sharing each epoch"""

    @world_size.setter
    def world_size(self, arg: object, /) -> None: ...

    @property
    def pad_to_batch(self) -> object:
        """
        allow batch_size x world_size above the sample count (the one batch wraps around)
        """

    @pad_to_batch.setter
    def pad_to_batch(self, arg: object, /) -> None: ...

    @property
    def timeout(self) -> object:
        """
        seconds to wait for a batch before raising ReadTimeoutError and cancelling the epoch
        """

    @timeout.setter
    def timeout(self, arg: object, /) -> None: ...

    @property
    def shuffle_block(self) -> object:
        """
        samples per stored chunk for the chunk-aware shuffle (shuffle="chunks")
        """

    @shuffle_block.setter
    def shuffle_block(self, arg: object, /) -> None: ...

    @property
    def shuffle_window(self) -> object:
        """chunk-aware shuffle: chunks whose samples are shuffled together"""

    @shuffle_window.setter
    def shuffle_window(self, arg: object, /) -> None: ...

    @property
    def indices(self) -> object:
        """
        the sample numbers an epoch draws from (a subset, a stride, an order; shuffle=False keeps it)
        """

    @indices.setter
    def indices(self, arg: object, /) -> None: ...

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

    def __init__(self, **kwargs) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def variables(self) -> object:
        """input variables, in channel order"""

    @variables.setter
    def variables(self, arg: object, /) -> None: ...

    @property
    def target_variables(self) -> object:
        """variables of "targets\""""

    @target_variables.setter
    def target_variables(self, arg: object, /) -> None: ...

    @property
    def forcings(self) -> object:
        """variables read at the target steps, appended to the inputs"""

    @forcings.setter
    def forcings(self, arg: object, /) -> None: ...

    @property
    def computed_forcings(self) -> object:
        """
        cos_local_time, sin_local_time, cos_day_of_year, sin_day_of_year, toa_radiation: computed at the target steps, after the stored forcings (not normalised)
        """

    @computed_forcings.setter
    def computed_forcings(self, arg: object, /) -> None: ...

    @property
    def statics(self) -> object:
        """2-D (lat, lon) fields appended to the inputs once"""

    @statics.setter
    def statics(self, arg: object, /) -> None: ...

    @property
    def levels(self) -> object:
        """values of the level coordinate to read"""

    @levels.setter
    def levels(self, arg: object, /) -> None: ...

    @property
    def level_indices(self) -> object:
        """positions along the level axis to read"""

    @level_indices.setter
    def level_indices(self, arg: object, /) -> None: ...

    @property
    def input_offsets(self) -> object:
        """input steps, in store steps from the sample's time"""

    @input_offsets.setter
    def input_offsets(self, arg: object, /) -> None: ...

    @property
    def target_offsets(self) -> object:
        """target steps, in store steps"""

    @target_offsets.setter
    def target_offsets(self, arg: object, /) -> None: ...

    @property
    def channels_last(self) -> object:
        """outputs (lat, lon, channels), else (channels, lat, lon)"""

    @channels_last.setter
    def channels_last(self, arg: object, /) -> None: ...

    @property
    def dtype(self) -> object:
        """the outputs' dtype"""

    @dtype.setter
    def dtype(self, arg: object, /) -> None: ...

    @property
    def decode_cf(self) -> object:
        """CF decoding: fill values -> NaN, scale_factor/add_offset"""

    @decode_cf.setter
    def decode_cf(self, arg: object, /) -> None: ...

    @property
    def nan_mask(self) -> object:
        """
        append a channel per input channel: 1 where the value was missing ("<channel>/mask")
        """

    @nan_mask.setter
    def nan_mask(self, arg: object, /) -> None: ...

    @property
    def mean(self) -> object:
        """normalisation: one mean per channel of one step of the inputs"""

    @mean.setter
    def mean(self, arg: object, /) -> None: ...

    @property
    def std(self) -> object:
        """normalisation: one standard deviation per channel (> 0)"""

    @std.setter
    def std(self, arg: object, /) -> None: ...

    @property
    def mean_suffix(self) -> object:
        """
        normalise with the arrays named variable + suffix ("mean/{}": a pattern)
        """

    @mean_suffix.setter
    def mean_suffix(self, arg: object, /) -> None: ...

    @property
    def std_suffix(self) -> object:
        """the same for the standard deviations"""

    @std_suffix.setter
    def std_suffix(self, arg: object, /) -> None: ...

    @property
    def statistics(self) -> object:
        """
        a group written by `chute stats`: normalise with its mean/<v> and std/<v>
        """

    @statistics.setter
    def statistics(self, arg: object, /) -> None: ...

    @property
    def masked_points(self) -> object:
        """
        a read point whose statistics are not finite or std <= 0: an error, or NaN values
        """

    @masked_points.setter
    def masked_points(self, arg: object, /) -> None: ...

    @property
    def std_floor(self) -> object:
        """raise every finite std below it to it"""

    @std_floor.setter
    def std_floor(self, arg: object, /) -> None: ...

    @property
    def level_coordinate(self) -> object:
        """the coordinate array of levels when not named like the level dimension"""

    @level_coordinate.setter
    def level_coordinate(self, arg: object, /) -> None: ...

    @property
    def nan(self) -> object:
        """missing values"""

    @nan.setter
    def nan(self, arg: object, /) -> None: ...

    @property
    def nan_value(self) -> object:
        """the value replacing missing ones"""

    @nan_value.setter
    def nan_value(self, arg: object, /) -> None: ...

    @property
    def time_start(self) -> object:
        """first time index of the windows"""

    @time_start.setter
    def time_start(self, arg: object, /) -> None: ...

    @property
    def time_stop(self) -> object:
        """time index the windows stay before (-1: the end)"""

    @time_stop.setter
    def time_stop(self, arg: object, /) -> None: ...

    @property
    def sample_stride(self) -> object:
        """time steps between samples"""

    @sample_stride.setter
    def sample_stride(self, arg: object, /) -> None: ...

    @property
    def sample_times(self) -> object:
        """the samples' time indices"""

    @sample_times.setter
    def sample_times(self, arg: object, /) -> None: ...

    @property
    def time_map(self) -> object:
        """store time index of each step of a regular axis"""

    @time_map.setter
    def time_map(self, arg: object, /) -> None: ...

    @property
    def time_seconds(self) -> object:
        """seconds since 1970 of every time index"""

    @time_seconds.setter
    def time_seconds(self, arg: object, /) -> None: ...

    @property
    def lat_values(self) -> object:
        """degrees of every grid row"""

    @lat_values.setter
    def lat_values(self, arg: object, /) -> None: ...

    @property
    def lon_values(self) -> object:
        """degrees of every grid column"""

    @lon_values.setter
    def lon_values(self, arg: object, /) -> None: ...

    @property
    def lat_start(self) -> object:
        """first latitude row read"""

    @lat_start.setter
    def lat_start(self, arg: object, /) -> None: ...

    @property
    def lat_stop(self) -> object:
        """latitude row the read stops before (-1: the end)"""

    @lat_stop.setter
    def lat_stop(self, arg: object, /) -> None: ...

    @property
    def lon_start(self) -> object:
        """first longitude column read"""

    @lon_start.setter
    def lon_start(self, arg: object, /) -> None: ...

    @property
    def lon_stop(self) -> object:
        """longitude column the read stops before (-1: the end)"""

    @lon_stop.setter
    def lon_stop(self, arg: object, /) -> None: ...

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

    def __init__(self, **kwargs) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def size(self) -> object:
        """crop extent: one value for every spatial axis, or one per axis"""

    @size.setter
    def size(self, arg: object, /) -> None: ...

    @property
    def channel_axis(self) -> object:
        """the axis holding channels in every array (negative: from the end)"""

    @channel_axis.setter
    def channel_axis(self, arg: object, /) -> None: ...

    @property
    def crops_per_epoch(self) -> object:
        """crops in one epoch"""

    @crops_per_epoch.setter
    def crops_per_epoch(self, arg: object, /) -> None: ...

    @property
    def transforms(self) -> object:
        """
        "rotations" (the cube's 24 right-angle rotations), "symmetries" (all 48, with reflections) or "none", one id per crop applied while it is placed
        """

    @transforms.setter
    def transforms(self, arg: object, /) -> None: ...

    @property
    def channels_last(self) -> object:
        """outputs (*size, C) instead of (C, *size), whatever the stored layout"""

    @channels_last.setter
    def channels_last(self, arg: object, /) -> None: ...

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

    def __init__(self, **kwargs) -> None:
        """
        Keyword arguments: the options by name (see _fields()); each is checked here.
        """

    @property
    def cache(self) -> object:
        """
        node-local cache folder: the stored bytes of every chunk read are kept there, so later runs read them locally
        """

    @cache.setter
    def cache(self, arg: object, /) -> None: ...

    @property
    def cache_size(self) -> object:
        """size limit of the cache folder in bytes"""

    @cache_size.setter
    def cache_size(self, arg: object, /) -> None: ...

    @property
    def cache_fsync(self) -> object:
        """fsync each entry before renaming it into place"""

    @cache_fsync.setter
    def cache_fsync(self, arg: object, /) -> None: ...

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
    """A W1 dataset, and the most samples one read chunk holds along axis 0."""

def _open_windows(paths: Sequence[str], options: WindowOptions, cache: bytes = ..., cache_size: int = 0) -> _WindowDataset: ...

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

def _http_options() -> dict: ...

def _set_http_options(arg: dict, /) -> None: ...

def _http_shutdown() -> None: ...

def _http_running() -> bool: ...

def _storage_options(arg: str, /) -> dict[str, str]: ...

def _set_storage_options(arg0: str, arg1: Mapping[str, str], /) -> None: ...
