"""Validation of scalar arguments shared by the checkpoint models (private)."""

import math
from numbers import Integral, Real

from relkit.errors import InvalidParameterError


def checked(
    value: object, name: str, *, strict: bool = True, unit: str = "hours"
) -> float:
    """Return value as float if finite and > 0 (strict) or >= 0, else raise."""
    rule = f"{'>' if strict else '>='} 0 ({unit})"
    is_number = isinstance(value, Real) and not isinstance(value, bool)
    x = float(value) if is_number else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(x) and (x > 0.0 if strict else x >= 0.0)):
        msg = f"{name} must be a finite number {rule}; got {value!r}."
        raise InvalidParameterError(msg)
    return x


def whole_nodes(value: object) -> int:
    """Return value as int if it is a whole number of nodes >= 1, else raise."""
    return whole(value, "n_nodes", what=" (nodes, e.g. GPUs // 8)")


def fraction(value: object, name: str) -> float:
    """Return value as float if it is a finite number in [0, 1], else raise."""
    is_number = isinstance(value, Real) and not isinstance(value, bool)
    x = float(value) if is_number else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        msg = f"{name} must be a fraction in [0, 1]; got {value!r}."
        raise InvalidParameterError(msg)
    return x


def whole(value: object, name: str, *, minimum: int = 1, what: str = "") -> int:
    """Return value as int if it is a whole number >= minimum, else raise."""
    ok = not isinstance(value, bool) and (
        isinstance(value, Integral)
        or (
            isinstance(value, Real)
            and math.isfinite(float(value))
            and float(value).is_integer()
        )
    )
    if not ok or int(value) < minimum:  # type: ignore[call-overload]
        msg = f"{name} must be a whole number >= {minimum}{what}; got {value!r}."
        raise InvalidParameterError(msg)
    return int(value)  # type: ignore[call-overload]
