"""Pickling by reopening. chute's objects hold open files, stores and threads, which cannot go
to another process; the call that made them can. `chute.open`, `open_group`, `packed`,
`windows`, `crops` and `anemoi` record their call on what they return, and an unpickled copy is
that call made again in the process that unpickles it: a PyTorch DataLoader worker started with
"spawn" or "forkserver" (Python 3.14's default on Linux), a multiprocessing pool, Ray or Dask.
Paths must name the same data there; a Loader also checks the dataset's fingerprint. The call's
containers are copied when it is recorded (changing a dict of paths afterwards changes nothing),
and `follow_symlinks=None` is recorded as the process-wide choice then in effect. Other
process-wide settings (`set_http_options`, `set_storage_options`) are the worker's own.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _chute

Recipe = tuple[Callable[..., Any], tuple, dict]


def kept(value: Any) -> Any:
    """`value` as it is now: containers the caller may change later are copied (shallow)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, set):
        return set(value)
    return value


def remembered(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, whose result records the call (`_recipe`) when it can hold one."""
    takes_symlinks = "follow_symlinks" in inspect.signature(function).parameters or getattr(
        function, "takes_follow_symlinks", False
    )

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        remember = getattr(result, "_remember", None)
        if remember is not None:
            named = {name: kept(value) for name, value in kwargs.items()}
            if takes_symlinks and named.get("follow_symlinks") is None:
                named["follow_symlinks"] = _chute.get_follow_symlinks()
            remember((wrapper, tuple(kept(a) for a in args), named))
        return result

    return wrapper


def rebuild(function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return function(*args, **kwargs)


def member_of(recipe: Recipe, name: str) -> Any:
    """Member `name` of the group `recipe` opens."""
    return rebuild(*recipe)[name]


def reduce(obj: Any, recipe: Recipe | None) -> tuple:
    """What pickle stores for `obj`: its recipe, or TypeError saying what to pickle instead."""
    if recipe is None:
        raise TypeError(
            f"cannot pickle {obj!r}: it was not made by chute.open, open_group, packed, windows, "
            "crops or anemoi, whose calls are made again where it is unpickled; pickle what "
            "makes it, or make it in the worker"
        )
    function, args, kwargs = recipe
    return (rebuild, (function, args, kwargs))


def shallow_copy(obj: Any) -> Any:
    """copy.copy of an object with a __dict__: the same core, nothing opened again."""
    other = object.__new__(type(obj))
    other.__dict__.update(obj.__dict__)
    return other
