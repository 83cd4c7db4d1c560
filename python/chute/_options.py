"""Checks of public options: each failure is an InvalidArgumentError naming the
option, the value and what is allowed, raised before anything is opened or started. No binding
TypeError, no silent clamping or truncation (1.5 is not an integer, True is not a count)."""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import _chute

UINT64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1


def invalid(message: str) -> Exception:
    return _chute.InvalidArgumentError(message)


def integer(name: str, value: Any, low: int, high: int, allowed: str = "") -> int:
    """`value` as an int in [low, high], else InvalidArgumentError naming option and range."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise invalid(
            f"{name} must be an integer{allowed or f' in [{low}, {high}]'}, got {value!r}"
        )
    number = operator.index(value)
    if not low <= number <= high:
        raise invalid(f"{name} must be in [{low}, {high}]{allowed}, got {number}")
    return number


def flag(name: str, value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise invalid(f"{name} must be True or False, got {value!r}")


def number(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite real number in [low, high] (not NaN, not infinite, not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise invalid(f"{name} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result) or not low <= result <= high:
        raise invalid(f"{name} must be a finite number in [{low}, {high}], got {value!r}")
    return result


def choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    if not any(
        value is a or (a is not None and isinstance(value, type(a)) and value == a) for a in allowed
    ):
        raise invalid(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise invalid(f"{name} must be a str, got {value!r}")
    return value


def path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise invalid(f"{name} must be a path (str or os.PathLike), got {value!r}")
    return os.fspath(value)


def _items(name: str, value: Any, what: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise invalid(f"{name} must be a list of {what}, got {value!r}")
    return list(value)


def texts(name: str, value: Any) -> list[str]:
    """A list of str (a bare str is refused: it would be read letter by letter)."""
    return [text(f"{name}[{i}]", v) for i, v in enumerate(_items(name, value, "str"))]


def integers(name: str, value: Any, low: int = -INT64_MAX, high: int = INT64_MAX) -> list[int]:
    items = _items(name, value, "integers")
    return [integer(f"{name}[{i}]", v, low, high) for i, v in enumerate(items)]


def numbers(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> list[float]:
    items = _items(name, value, "numbers")
    return [number(f"{name}[{i}]", v, low, high) for i, v in enumerate(items)]


def non_empty(name: str, values: list[Any]) -> list[Any]:
    if not values:
        raise invalid(f"{name} must not be empty")
    return values
