"""A package's names loaded from their module on first use (PEP 562), so that importing the package
costs nothing until a name is asked for (ADR 0010)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def attributes(package: str, homes: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: `homes` maps a name to the submodule that defines it; a
    name, once loaded, is kept in the package's `namespace` (its globals)."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return load
