"""Pickling by reopening. chute's objects hold open files, stores and threads, which cannot go
to another process; the call that made them can. `chute.open`, `open_group`, `packed`,
`windows`, `crops` and `anemoi` record their call on what they return, and an unpickled copy is
that call made again in the process that unpickles it: a PyTorch DataLoader worker started with
"spawn" or "forkserver" (Python 3.14's default on Linux), a multiprocessing pool, Ray or Dask.
Paths must name the same data there; a Loader also checks the dataset's fingerprint.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Recipe = tuple[Callable[..., Any], tuple, dict]


def remembered(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, whose result records the call (`_recipe`) when it can hold one."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        remember = getattr(result, "_remember", None)
        if remember is not None:
            remember((wrapper, args, kwargs))
        return result

    return wrapper


def rebuild(function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return function(*args, **kwargs)


def member(container: Any, name: str) -> Any:
    return container[name]


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
