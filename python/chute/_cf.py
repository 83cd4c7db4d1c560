"""CF conventions as xarray writes them into Zarr attributes, for plain reads with decode_cf=True.

Values: a stored value equal to `_FillValue` or `missing_value` (for Zarr v2 also the array's
fill_value, which xarray reads as `_FillValue`) becomes NaN, then value * scale_factor +
add_offset, in the float dtype xarray chooses from the attributes' types: float64 when scaled by
attributes read from JSON (Python floats), float32 when HDF5/NetCDF-4 attributes scale_factor and
add_offset are both float32 (on int8/int16/float32 data), float32 for int8/int16 data only
masked, the stored float type for masked floats, else float64.

Times: an array whose `units` read "<unit> since <date>" with a standard, gregorian or
proleptic_gregorian calendar decodes to numpy.datetime64[ns]; other calendars raise.
"""

from __future__ import annotations

import base64
import re
import struct
from typing import Any

import numpy as np

from . import _chute

__all__ = ["CfDecoder", "decode_times", "time_units"]

_UNITS = {
    "nanoseconds": "ns",
    "microseconds": "us",
    "milliseconds": "ms",
    "seconds": "s",
    "minutes": "m",
    "hours": "h",
    "days": "D",
}
_ALIASES = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "sec": "seconds",
            "secs": "seconds", "second": "seconds", "s": "seconds", "min": "minutes",
            "mins": "minutes", "minute": "minutes", "hour": "hours", "hr": "hours", "h": "hours",
            "day": "days", "d": "days"}  # fmt: skip
_CALENDARS = ("standard", "gregorian", "proleptic_gregorian")
_GREGORIAN_START = np.datetime64("1582-10-15", "D")


def time_units(units: Any) -> tuple[str, np.datetime64] | None:
    """(numpy unit code, reference date) of "hours since 1979-01-01 00:00", else None."""
    if not isinstance(units, str):
        return None
    match = re.fullmatch(r"\s*(\w+)\s+since\s+(.+?)\s*", units)
    if not match:
        return None
    unit = match.group(1).lower()
    unit = _ALIASES.get(unit, unit)
    if unit not in _UNITS:
        return None
    text = match.group(2).strip().replace(" ", "T", 1)
    # CF allows unpadded dates ("1970-1-1"); numpy does not
    text = re.sub(r"^(-?\d+)-(\d{1,2})-(\d{1,2})",
                  lambda m: f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}", text)  # fmt: skip
    text = re.sub(r"(Z|[+-]00:?00|UTC)$", "", text).rstrip("T")
    try:
        # microseconds: wide enough for any reference date (datetime64[ns] would wrap a year
        # such as -4713 around silently); nanosecond digits are added in reference_ns
        reference = np.datetime64(text, "us")
    except ValueError as error:
        raise _chute.InvalidArgumentError(
            f"time units {units!r}: cannot read the reference date {match.group(2)!r}"
        ) from error
    return _UNITS[unit], reference


def _reference_ns(units: str, reference: np.datetime64) -> int:
    """The reference date in nanoseconds since 1970 as a Python int (any year), including the
    digits past microseconds that datetime64[us] drops."""
    fraction = re.search(r"\d:\d{1,2}:\d{1,2}\.(\d+)", units)
    extra = int(fraction.group(1)[6:9].ljust(3, "0")) if fraction else 0
    return int(reference.astype(np.int64)) * 1000 + extra


def decode_times(values: np.ndarray, attrs: dict, name: str) -> np.ndarray:
    """Stored time numbers -> datetime64[ns], following `units` and `calendar` of `attrs`."""
    parsed = time_units(attrs.get("units"))
    if parsed is None:
        raise _chute.InvalidArgumentError(
            f"array {name!r}: units {attrs.get('units')!r} are not '<unit> since <date>'"
        )
    unit, reference = parsed
    calendar = str(attrs.get("calendar", "standard")).lower()
    if calendar not in _CALENDARS:
        raise _chute.UnsupportedError(
            f"array {name!r}: calendar {calendar!r} is not supported (chute decodes times of the "
            f"{', '.join(_CALENDARS)} calendars to numpy.datetime64)"
        )
    if calendar != "proleptic_gregorian" and reference.astype("datetime64[D]") < _GREGORIAN_START:
        raise _chute.UnsupportedError(
            f"array {name!r}: calendar {calendar!r} with a reference date before 1582-10-15 "
            "differs from numpy's proleptic Gregorian dates"
        )
    values = np.asarray(values)
    missing = np.isnan(values) if values.dtype.kind == "f" else np.zeros(values.shape, bool)
    unit_ns = int(np.timedelta64(1, unit) / np.timedelta64(1, "ns"))
    reference_ns = _reference_ns(attrs["units"], reference)
    if values.dtype.kind == "f":
        wide = values.astype(np.float64)  # float32 days × 86400e9 ns would round to float32
        with np.errstate(invalid="ignore", over="ignore"):
            nanos = np.where(missing, 0.0, np.round(wide * unit_ns))
        # beyond ±2^63 ns the count cannot be an int64; _nanoseconds reports it
        too_far = ~missing & ~(np.abs(nanos) < 2.0**63)
        if too_far.any():
            _out_of_range(values[too_far].flat[0], attrs, name)
        counts, unit_ns = nanos.astype(np.int64), 1
    else:
        if values.dtype.kind == "u" and values.size and values.max() > np.iinfo(np.int64).max:
            _out_of_range(values.max(), attrs, name)
        counts = values.astype(np.int64)
    result = _nanoseconds(counts, unit_ns, reference_ns, missing, values, attrs, name)
    if missing.any():
        result[missing] = np.datetime64("NaT")
    return result


_NS_MIN = -(2**63) + 1  # -2^63 is NaT
_NS_MAX = 2**63 - 1


def _out_of_range(value: Any, attrs: dict, name: str) -> None:
    raise _chute.OutOfRangeError(
        f"array {name!r}: time value {value} with units {attrs.get('units')!r} is a date "
        "outside what numpy.datetime64[ns] holds (1677-09-21 to 2262-04-11)"
    )


def _nanoseconds(
    counts: np.ndarray,
    unit_ns: int,
    reference_ns: int,
    missing: np.ndarray,
    values: np.ndarray,
    attrs: dict,
    name: str,
) -> np.ndarray:
    """reference + counts × unit as datetime64[ns], exactly, or OutOfRangeError naming the first
    value whose date does not fit (numpy's own arithmetic would wrap around silently)."""
    # counts × unit + reference within [_NS_MIN, _NS_MAX] <=> lo <= counts <= hi (Python ints).
    lo = -((reference_ns - _NS_MIN) // unit_ns)  # ceil((_NS_MIN - reference) / unit)
    hi = (_NS_MAX - reference_ns) // unit_ns
    i64 = np.iinfo(np.int64)
    bad = ~missing & (
        (counts < max(lo, i64.min)) | (counts > min(hi, i64.max))
        if lo <= i64.max and hi >= i64.min and lo <= hi
        else np.ones(counts.shape, bool)
    )
    if bad.any():
        _out_of_range(values[bad].flat[0], attrs, name)
    counts = np.where(missing, 0, counts)
    # reference = q × unit + r (0 <= r < unit): (counts + q) × unit + r is the date, and every
    # partial result lies in int64 once the bounds hold.
    q, r = divmod(reference_ns, unit_ns)
    if i64.min <= q <= i64.max:
        with np.errstate(over="raise"):
            total = (counts + np.int64(q)) * np.int64(unit_ns) + np.int64(r)
    else:  # a reference far outside the range with counts that bring it back: Python ints
        total = np.array([(int(c) + q) * unit_ns + r for c in counts.flat], np.int64)
        total = total.reshape(counts.shape)
    return total.astype("datetime64[ns]")


def _typed_value(value: Any) -> Any:
    """The attribute as xarray's arithmetic sees it: a NumPy scalar keeps its type (HDF5 and
    NetCDF-4 attributes are typed: a float32 scale_factor), a one-element list or array becomes
    its element, JSON's specials ("NaN", base64 doubles) become floats."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


def _value_dtype(value: Any) -> np.dtype:
    """np.dtype(type(value)), as xarray picks the decoded type from the attributes' types."""
    if isinstance(value, np.generic):
        return value.dtype
    return np.dtype(np.float64 if isinstance(value, str) else type(value))


def _attribute_number(value: Any, name: str, field: str) -> float:
    value = _typed_value(value)
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        value = value.item()
    if value is None and field in ("_FillValue", "missing_value"):
        return np.nan  # an HDF5 NaN attribute (xarray's fill for float coordinates): JSON null
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _chute.InvalidMetadataError(f"array {name!r}: attribute {field!r} is {value!r}")
    if isinstance(value, str):
        special = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
        if value in special:
            return special[value]
        try:
            return struct.unpack("<d", base64.standard_b64decode(value))[0]
        except (ValueError, struct.error) as error:
            raise _chute.InvalidMetadataError(
                f"array {name!r}: attribute {field!r} is {value!r}, expected a number"
            ) from error
    return value


class CfDecoder:
    """What decoding does to one array: built from its attributes, applied to boxes read raw."""

    def __init__(self, array: Any) -> None:
        attrs = array.attrs
        name = array.path
        self.name = name
        self.attrs = attrs
        self.raw_dtype = array.dtype
        self.is_time = time_units(attrs.get("units")) is not None and array.dtype.kind in "iuf"
        # The values as numbers (for the C++ decoding and checks) and as xarray multiplies by
        # them (typed: a float32 scale_factor scales a float32 array in float32).
        self.scale = self.scale_value = attrs.get("scale_factor")
        self.offset = self.offset_value = attrs.get("add_offset")
        if self.scale is not None:
            self.scale = _attribute_number(self.scale, name, "scale_factor")
            self.scale_value = self._typed(attrs["scale_factor"], self.scale)
        if self.offset is not None:
            self.offset = _attribute_number(self.offset, name, "add_offset")
            self.offset_value = self._typed(attrs["add_offset"], self.offset)
        missing = []
        if "_FillValue" in attrs:
            if attrs["_FillValue"] is not None:
                missing.append(_attribute_number(attrs["_FillValue"], name, "_FillValue"))
        elif (
            array.zarr_format == 2 and not array._core.fill_value_null and array.dtype.kind in "iuf"
        ):
            missing.append(array.fill_value.item())
        mv = attrs.get("missing_value")
        if mv is not None:
            if isinstance(mv, np.ndarray):
                mv = mv.tolist()
            for value in mv if isinstance(mv, list) else [mv]:
                missing.append(_attribute_number(value, name, "missing_value"))
        self.missing = [m for m in missing if not (isinstance(m, float) and np.isnan(m))]
        if array.dtype.kind not in "iuf" and (self.missing or self.scale or self.offset):
            raise _chute.UnsupportedError(
                f"array {name!r}: CF encoding on dtype {array.dtype} (expected a number type)"
            )
        self.dtype = self._decoded_dtype()
        # Values (not times) decode in C++ while each chunk is placed (_Array.read_decoded_into,
        # src/chute/array/element_convert.h), which scales in float64 only; decode() does the
        # same to a raw read in NumPy and is what times and float32 scaling use.
        packed = self.scale is not None or self.offset is not None
        self.fused = (
            not self.is_time
            and self.active
            and self.raw_dtype.kind in "iuf"
            and (
                self.dtype == np.dtype(np.float64)
                or (self.dtype == np.dtype(np.float32) and not packed)
            )
        )

    @property
    def active(self) -> bool:
        return (
            self.is_time
            or bool(self.missing)
            or self.scale is not None
            or (self.offset is not None)
        )

    @staticmethod
    def _typed(attribute: Any, number: float) -> Any:
        value = _typed_value(attribute)
        if isinstance(value, np.generic) and value.dtype.kind in "iuf":
            return value
        return number  # a Python number (JSON), as xarray reads Zarr attributes

    def _decoded_dtype(self) -> np.dtype:
        """xarray's choice (coding/variables.py: maybe_promote when only masked,
        _choose_float_dtype when packed), from the attributes' own types."""
        if self.is_time:
            return np.dtype("datetime64[ns]")
        raw = self.raw_dtype
        if self.scale is not None or self.offset is not None:
            scale = None if self.scale is None else _value_dtype(self.scale_value)
            offset = None if self.offset is None else _value_dtype(self.offset_value)
            if (
                scale is not None
                and offset is not None
                and scale == offset
                and scale in (np.float32, np.float64)
            ):
                if raw.itemsize == 4 and raw.kind in "iu":
                    return np.dtype(np.float64)
                return scale
            if offset is not None:
                return np.dtype(np.float64)
            # a scale of an integer type would decode to integers, which cannot hold NaN
            return scale if scale.kind == "f" else np.dtype(np.float64)
        if not self.missing:
            return raw
        if raw.kind == "f":
            return raw
        if raw.kind in "iu" and raw.itemsize <= 2:
            return np.dtype(np.float32)
        return np.dtype(np.float64)

    def read_into(self, core: Any, start: list, out: np.ndarray) -> None:
        """Reads and decodes box [start, start + out.shape) into `out` (of self.dtype) in C++."""
        core.read_decoded_into(
            start,
            out,
            None if self.scale is None else float(self.scale),
            None if self.offset is None else float(self.offset),
            [float(m) for m in self.missing],
        )

    def decode(self, raw: np.ndarray) -> np.ndarray:
        if self.is_time:
            if self.missing or self.scale is not None or self.offset is not None:
                values = raw.astype(np.float64)
                values[np.isin(raw, self.missing)] = np.nan
                # packed times: scale and offset first, as xarray does
                raw = values * (1.0 if self.scale is None else self.scale) + (self.offset or 0.0)
            return decode_times(raw, self.attrs, self.name)
        if not self.active:
            return raw
        # xarray's steps: cast, mask (compared in the decoded type), then `*=` and `+=` with the
        # attribute values themselves, so NumPy rounds exactly as it does there.
        data = raw.astype(self.dtype)
        if self.missing:
            condition = np.zeros(data.shape, bool)
            for value in self.missing:
                condition |= data == value
            data[condition] = np.nan
        if self.scale is not None:
            data *= self.scale_value
        if self.offset is not None:
            data += self.offset_value
        return data
