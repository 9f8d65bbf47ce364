"""Building tens of thousands of records at once without the cyclic garbage collector.

A cold read makes ~50,000 dicts, lists and tuples that hold no reference cycles, and the collector's
passes over them as they pile up cost ~10% of its time (ADR 0015). `no_gc` switches it off for the
build and back on after (if it was on): nothing cyclic is lost, it is collected later.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_gc() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
