"""The process environment as text, decoded once while it stays the same (ADR 0016).

`os.environ` decodes every name and value again on each pass over it (a Python call per item), and a
served change passed over it a dozen times: for each git process's environment, and twice for the config
fingerprint (`files.config_fingerprint`). `current()` compares the raw environment with the one it decoded
last (one dict comparison, in C) and decodes again only when it differs, so a change made through
`os.environ` (a test's monkeypatch, the worker taking its client's environment) is seen at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# The folder the running command acts in (`michi -C DIR`, else where it started), set when its session is
# made: a caller's relative GIT_DIR and the like are read from there, as `git -C` reads them (`plain`).
acting_in: str | None = None
_raw: dict[object, object] | None = None  # a copy of os.environ's raw items when last decoded
_text: dict[str, str] = {}


def current() -> Mapping[str, str]:
    """os.environ as a plain mapping of text; read-only (shared until the environment changes)."""
    global _raw, _text
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):  # not CPython's `os._Environ`: decode every time
        return dict(os.environ)
    if data != _raw:
        raw = dict(data)  # copied before decoding: a change in between is seen as one next time
        _text, _raw = dict(os.environ), raw
    return _text
