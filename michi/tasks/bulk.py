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
def no_gc(keep: bool = False) -> Iterator[None]:
    """`keep`: what was built lives as long as the process (a cold `list`'s table): frozen out of the
    collector's sight, or its next collection walks every one of those objects (~0.1 s at 50,000 tasks)
    only to find them alive. Also freezes whatever else is alive then, which is why it is not the
    default: a long-running process would never collect the cycles among them."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if was_on:
            gc.enable()
