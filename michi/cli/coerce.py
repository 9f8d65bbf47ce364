"""Plain coercion of command-line values, so parsing never imports pydantic (ADR 0010).

typer 0.29 converts every non-flag value through a pydantic `TypeAdapter` built per parameter: importing
pydantic and building the adapters costs ~100-250 ms per process, more than a whole transaction. michi's
parameters are all plain (`str`, `int`, `float`, `bool`, `Path`, lists of them, optionally a `min`), so each
parameter gets a converter that does what typer's adapter does for those types, with the same
usage errors (exit 2). Anything else (choices, files, parsers, bounds other than `min`) keeps typer's own
coercion. typer versions that convert through click types have no `_runtime_param` and are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

import typer

_TRUE, _FALSE = {"1", "true", "t", "yes", "y", "on"}, {"0", "false", "f", "no", "n", "off"}


def _flag(value: Any) -> bool:
    """A boolean given as text (an environment variable or `--flag=value`), as click reads it."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(text)


_PLAIN: dict[Any, Callable[[Any], Any]] = {str: str, int: int, float: float, Path: Path, bool: _flag}
_NAMES = {str: "text", int: "integer", float: "number", Path: "path", bool: "boolean"}


class PlainParam:
    """Duck-types typer's `RuntimeParam`: `coerce(value, param, ctx)`."""

    def __init__(self, kind: Any, minimum: float | None) -> None:
        self.kind, self.minimum = kind, minimum

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        if many:
            if isinstance(value, str):
                raise typer.BadParameter("Value must be an iterable.", ctx=ctx, param=param)
            return [self._one(item, param, ctx) for item in value]
        return self._one(value, param, ctx)

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "surrogateescape")
        if isinstance(value, self.kind) and (self.kind is bool or not isinstance(value, bool)):
            converted = value
        else:
            try:
                converted = _PLAIN[self.kind](value)
            except (TypeError, ValueError):
                raise typer.BadParameter(
                    f"{value!r} is not a valid {_NAMES[self.kind]}.", ctx=ctx, param=param
                ) from None
        if self.minimum is not None and not converted >= self.minimum:  # also refuses NaN
            raise typer.BadParameter(f"{value!r} is not a number >= {self.minimum:g}.", ctx=ctx, param=param)
        return converted


def plain_param(param: Any) -> PlainParam | None:
    """The plain converter for a typer parameter, or None when typer's own coercion must stay."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not hasattr(param, "_runtime_param"):
        return None
    info = descriptor.parameter_info
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    special = (
        getattr(info, "parser", None),
        getattr(info, "max", None),
        getattr(info, "clamp", False) or None,
        getattr(info, "exists", False) or None,
        getattr(info, "resolve_path", False) or None,
        getattr(info, "allow_dash", False) or None,
        getattr(info, "path_type", None),
    )
    if annotation not in _PLAIN or any(s is not None for s in special):
        return None
    minimum = getattr(info, "min", None)
    if minimum is not None and annotation not in (int, float):
        return None
    return PlainParam(annotation, minimum)


def install() -> None:
    """Route typer's lazy per-parameter coercion through `plain_param` first. typer builds a parameter's
    converter on first use (`_TyperParameter.get_runtime_param`), including the help option it creates
    while parsing, so wrapping that one method covers every parameter of every command."""
    from typer import core

    cls: Any = getattr(core, "_TyperParameter", None)
    original = getattr(cls, "get_runtime_param", None)
    if original is None or getattr(original, "michi_plain", False):
        return

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = plain_param(self)
        return self._runtime_param if self._runtime_param is not None else original(self)

    get_runtime_param.michi_plain = True  # type: ignore[attr-defined]
    cls.get_runtime_param = get_runtime_param
