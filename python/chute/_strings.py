"""String variables of HDF5 and NetCDF-4 files (ERA5's `expver`, station names) read as NumPy
arrays: labels and coordinates, read whole when opened, never batch input."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import _chute


def _char_join(chars: np.ndarray) -> np.ndarray:
    """'S1' characters along the last axis joined into 'S{n}' strings (xarray's
    CharacterArrayCoder)."""
    n = chars.shape[-1]
    if n == 0:
        return np.zeros(chars.shape[:-1], dtype="S1")
    return np.ascontiguousarray(chars).view(f"S{n}").reshape(chars.shape[:-1])


def _decode(data: np.ndarray, encoding: str) -> np.ndarray:
    out = np.empty(data.shape, dtype=object)
    flat = out.reshape(-1)
    for i, b in enumerate(data.reshape(-1)):
        flat[i] = bytes(b).decode(encoding)
    return out


class StringArray:
    """A string dataset of an HDF5 or NetCDF-4 file, read whole when opened.

    decode_cf=False gives the stored form as h5py and netCDF4-python do: fixed-length strings
    (and NetCDF char arrays) as a NumPy 'S{n}' array of the stored shape, variable-length
    strings as an object array of str. decode_cf=True gives xarray's decoded values: char
    arrays joined along their last axis into 'S{n}' strings, fixed-length strings with an
    `_Encoding` attribute decoded to an object array of str, variable-length strings as a
    NumPy 'U' array.
    """

    def __init__(self, info: dict, decode_cf: bool = False):
        self._name = info["name"]
        self._attrs = json.loads(info["attrs_json"])
        values = info["values"]
        shape = tuple(info["shape"])
        dims = tuple(info["dims"])
        self.variable_length: bool = bool(info["variable_length"])
        if self.variable_length:
            data = np.empty(len(values), dtype=object)
            for i, v in enumerate(values):
                data[i] = v.decode("utf-8", "surrogateescape")
            data = data.reshape(shape)
            if decode_cf:
                data = np.array(data.tolist(), dtype=str) if data.size else data.astype(str)
        else:
            data = np.array(values, dtype=f"S{max(info['size'], 1)}").reshape(shape)
            if decode_cf:
                if info["size"] == 1 and data.ndim >= 1:
                    data = _char_join(data)
                    dims = dims[:-1]
                encoding = self._attrs.get("_Encoding")
                if isinstance(encoding, str):
                    data = _decode(data, encoding)
        self._data = data
        self._dims = dims

    @property
    def name(self) -> str:
        return self._name

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def dims(self) -> tuple[str, ...]:
        """The NetCDF-4 dimension names, or () when the dataset has none."""
        return self._dims

    @property
    def attrs(self) -> dict:
        return self._attrs

    def __len__(self) -> int:
        if not self._data.ndim:
            raise TypeError("len() of a 0-d string array")
        return self._data.shape[0]

    def __getitem__(self, key: Any) -> Any:
        result = self._data[key]
        return result.copy() if isinstance(result, np.ndarray) else result

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data.copy() if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<chute.StringArray {self._name!r} shape={self.shape} dtype={self.dtype}>"


def open_strings(path: bytes, decode_cf: bool) -> StringArray | None:
    """The string dataset at `path`, or None when `path` is no string dataset."""
    info = _chute._open_strings(path)
    return None if info is None else StringArray(info, decode_cf)
