"""Zarr reference sets kept in Parquet (kerchunk's `refs_to_dataframe`, VirtualiZarr's
`to_kerchunk(format="parquet")`): read here with pyarrow and handed to the core as a reference
store registered under the folder's path, so every opener that takes a path takes the folder.
JSON reference files need none of this: the core reads them itself.

Layout: `<folder>/.zmetadata` holds {"metadata": {key: inline value}, "record_size": N}; the
chunk references of array `var` are rows of `<folder>/var/refs.<i>.parq` (columns path,
offset, size, raw), row j of file i being chunk i·N + j of the array's chunk grid in C order.
A row with neither path nor raw is a missing chunk (read as the fill value); size 0 at offset 0
refers to the whole file.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from . import _chute

_registered: dict[str, float] = {}  # folder -> .zmetadata mtime when registered


def _metadata_path(folder: str) -> str:
    return os.path.join(folder, ".zmetadata")


def is_parquet_references(path: Any) -> bool:
    """True when `path` is a local folder holding a Parquet reference set."""
    try:
        folder = os.fsdecode(path)
    except TypeError:
        return False
    if not os.path.isdir(folder) or not os.path.isfile(_metadata_path(folder)):
        return False
    try:
        with open(_metadata_path(folder), "rb") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "record_size" in doc


def _array_keys(name: str, zarray: dict) -> list[str]:
    """The chunk keys of array `name` in C order of its chunk grid."""
    shape, chunks = zarray["shape"], zarray["chunks"]
    sep = zarray.get("dimension_separator") or "."
    if not shape:
        return [f"{name}/0"]
    grid = [max(1, math.ceil(s / c)) if c else 1 for s, c in zip(shape, chunks)]
    keys = []
    total = math.prod(grid)
    for flat in range(total):
        coords = []
        for g in reversed(grid):
            coords.append(flat % g)
            flat //= g
        keys.append(f"{name}/" + sep.join(str(c) for c in reversed(coords)))
    return keys


def _read_columns(folder: str, name: str, zarray: dict, record_size: int, out: dict) -> None:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise _chute.UnsupportedError(
            f"{folder!r} is a Parquet reference set: reading it needs pyarrow "
            "(pip install pyarrow, or chute's [parquet] extra)"
        ) from None
    keys = _array_keys(name, zarray)
    for record in range(math.ceil(len(keys) / record_size)):
        file = os.path.join(folder, name, f"refs.{record}.parq")
        if not os.path.exists(file):
            continue  # every chunk of this record is missing
        table = pq.read_table(file).to_pydict()
        paths = table.get("path") or [None] * len(table.get("raw", []))
        raws = table.get("raw") or [None] * len(paths)
        offsets = table.get("offset") or [0] * len(paths)
        sizes = table.get("size") or [0] * len(paths)
        first = record * record_size
        for j, path in enumerate(paths):
            if first + j >= len(keys):
                break  # a record is written whole: rows past the last chunk are padding
            key = keys[first + j]
            raw = raws[j]
            if raw is not None:
                out["keys"].append(key)
                out["urls"].append("")
                out["offsets"].append(0)
                out["lengths"].append(-1)
                out["inline"].append(bytes(raw))
            elif path is not None:
                offset, size = int(offsets[j] or 0), int(sizes[j] or 0)
                out["keys"].append(key)
                out["urls"].append(str(path))
                whole = offset == 0 and size == 0
                out["offsets"].append(offset)
                out["lengths"].append(-1 if whole else size)
                out["inline"].append(b"")


def register(path: Any) -> None:
    """Reads the Parquet reference set at folder `path` and registers it with the core (again
    when its .zmetadata changed since)."""
    folder = os.fsdecode(path).rstrip("/") or "/"
    mtime = os.stat(_metadata_path(folder)).st_mtime
    if _registered.get(folder) == mtime:
        return
    with open(_metadata_path(folder), "rb") as f:
        doc = json.load(f)
    record_size = doc.get("record_size")
    metadata = doc.get("metadata")
    if not isinstance(record_size, int) or record_size < 1 or not isinstance(metadata, dict):
        raise _chute.InvalidMetadataError(
            f"reference set {folder!r}: .zmetadata needs 'metadata' (an object) and "
            f"'record_size' (an integer >= 1), got record_size={record_size!r}"
        )
    out: dict[str, list] = {"keys": [], "urls": [], "offsets": [], "lengths": [], "inline": []}
    for key, value in metadata.items():
        text = value if isinstance(value, str) else json.dumps(value)
        out["keys"].append(key)
        out["urls"].append("")
        out["offsets"].append(0)
        out["lengths"].append(-1)
        out["inline"].append(text.encode())
    for key, value in metadata.items():
        if key == ".zarray" or key.endswith("/.zarray"):
            zarray = json.loads(value) if isinstance(value, str) else value
            name = key[: -len("/.zarray")] if key != ".zarray" else ""
            _read_columns(folder, name, zarray, record_size, out)
    _chute._register_references(
        folder, out["keys"], out["urls"], out["offsets"], out["lengths"], out["inline"]
    )
    _registered[folder] = mtime


def prepare(path: Any) -> None:
    """Registers `path` (or the reference set it starts with: "refs.parq/var") when it is a
    Parquet reference set; does nothing otherwise."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        return
    text = os.fsdecode(path).rstrip("/")
    while text:
        if os.path.isfile(_metadata_path(text)):  # the nearest store with a .zmetadata decides
            if is_parquet_references(text):
                register(text)
            return
        head = os.path.dirname(text)
        if head == text:
            return
        text = head
