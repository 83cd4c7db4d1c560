"""CF conventions as xarray writes them into Zarr attributes, for plain reads with decode_cf=True.

Values: a stored value equal to `_FillValue` or `missing_value` (for Zarr v2 also the array's
fill_value, which xarray reads as `_FillValue`) becomes NaN, then value * scale_factor +
add_offset, in the float dtype xarray chooses (float64 when scaled by attributes read from JSON,
float32 for float16/float32 and int8/int16 data without scaling, else float64).

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
        reference = np.datetime64(text, "us")  # wide enough for any reference date
    except ValueError as error:
        raise _chute.InvalidArgumentError(
            f"time units {units!r}: cannot read the reference date {match.group(2)!r}"
        ) from error
    return _UNITS[unit], reference


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
    if values.dtype.kind == "f":
        nanos = np.timedelta64(1, unit) / np.timedelta64(1, "ns")
        wide = values.astype(np.float64)  # float32 days × 86400e9 ns would round to float32
        counts = np.where(missing, 0, np.round(wide * nanos)).astype(np.int64)
        result = reference + counts.astype("timedelta64[ns]")
    else:
        result = reference + values.astype(np.int64).astype(f"timedelta64[{unit}]")
    result = result.astype("datetime64[ns]")
    if missing.any():
        result[missing] = np.datetime64("NaT")
    return result


def _attribute_number(value: Any, name: str, field: str) -> float:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
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
        self.scale = attrs.get("scale_factor")
        self.offset = attrs.get("add_offset")
        if self.scale is not None:
            self.scale = _attribute_number(self.scale, name, "scale_factor")
        if self.offset is not None:
            self.offset = _attribute_number(self.offset, name, "add_offset")
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
            for value in mv if isinstance(mv, list) else [mv]:
                missing.append(_attribute_number(value, name, "missing_value"))
        self.missing = [m for m in missing if not (isinstance(m, float) and np.isnan(m))]
        if array.dtype.kind not in "iuf" and (self.missing or self.scale or self.offset):
            raise _chute.UnsupportedError(
                f"array {name!r}: CF encoding on dtype {array.dtype} (expected a number type)"
            )
        self.dtype = self._decoded_dtype()
        # Values (not times) decode in C++ while each chunk is placed (_Array.read_decoded_into,
        # src/chute/array/element_convert.h); decode() does the same to a raw read and is what
        # times use.
        self.fused = (
            not self.is_time
            and self.active
            and self.raw_dtype.kind in "iuf"
            and self.dtype in (np.dtype(np.float32), np.dtype(np.float64))
        )

    @property
    def active(self) -> bool:
        return (
            self.is_time
            or bool(self.missing)
            or self.scale is not None
            or (self.offset is not None)
        )

    def _decoded_dtype(self) -> np.dtype:
        if self.is_time:
            return np.dtype("datetime64[ns]")
        raw = self.raw_dtype
        if self.scale is not None or self.offset is not None:
            return np.dtype(np.float64)  # attributes from JSON are Python floats, as in xarray
        if not self.missing:
            return raw
        if raw.kind == "f" and raw.itemsize <= 4:
            return np.dtype(np.float32)
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
        data = raw.astype(self.dtype)
        if self.missing:
            data[np.isin(raw, np.asarray(self.missing, dtype=np.float64))] = np.nan
        if self.scale is not None:
            data *= self.scale
        if self.offset is not None:
            data += self.offset
        return data
