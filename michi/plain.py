"""Value behaviour (repr, ==, hash) for small record classes, without `@dataclass`.

A dataclass costs ~1 ms to create in Python 3.11 (it compiles its `__init__`, `__repr__`, `__eq__`...
from source), and a command imports dozens: more than michi's own work in `task add` (ADR 0010). A record
on the start-up path instead lists its fields in `__slots__`, writes its `__init__`, and inherits this:
the repr, equality and hash a frozen dataclass of those fields would have. Nothing stops assignment to a
field: treat them as frozen (mypy sees no setter use in michi). Records whose users need
`dataclasses.replace`, `fields` or `asdict` stay dataclasses.
"""

from __future__ import annotations

from typing import Any


class Plain:
    __slots__: tuple[str, ...] = ()
    _fields: tuple[str, ...] = ()  # every class's `__slots__` along the MRO, base classes first

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            names += [n for n in klass.__dict__.get("__slots__", ()) if n not in names and n[:2] != "__"]
        cls._fields = tuple(names)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())
