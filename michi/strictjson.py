"""JSON as the standard says it, for files anyone may have written (task files, the remote lock's record):
no NaN or Infinity (Python's `json` accepts both; neither is JSON, and NaN is never equal to itself), no
float too large to be a number. One decoder for every call: `json.loads` with hooks builds a new one (and
its scanner) each time."""

from __future__ import annotations

import json
from typing import Any


def _finite(text: str) -> float:
    number = float(text)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)


def strict_decoder() -> json.JSONDecoder:
    """The decoder `strict_json` uses, for reading values one at a time (`raw_decode`)."""
    return _DECODER


def strict_json(text: str) -> Any:
    """`json.loads` without NaN or Infinity. Raises ValueError, or RecursionError for nesting deeper than
    the interpreter's stack."""
    return _DECODER.decode(text)
