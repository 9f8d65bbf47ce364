"""Text anyone wrote (task fields, commit subjects and trailers, a remote hook's output, a lock record),
made safe to show on a terminal: a control character could recolour the screen, move the cursor, retitle
the window or write the clipboard (OSC 52), and a bidirectional override or isolate (U+202A-U+202E,
U+2066-U+2069) could make a line read other than it is ("Trojan Source"). Each becomes U+FFFD.

Imports nothing: the pre-commit hook's fast path (ADR 0005) uses it too.
"""

from __future__ import annotations

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = (*range(32), *range(127, 160))
REPLACED = "\ufffd"

# Every control character and bidirectional control: for text that is also parsed (commit trailers).
NONE_KEPT = dict.fromkeys((*_CONTROLS, *_BIDI), REPLACED)
# Line breaks and tabs kept: for messages and whole views.
LINES_KEPT = {c: r for c, r in NONE_KEPT.items() if c not in (9, 10)}
# Line breaks and tabs as spaces: for a table's cell.
ONE_LINE = NONE_KEPT | {9: " ", 10: " ", 13: " "}
# The same characters as a regular expression's class, in ranges (compiled at every start: half the
# time of one class of 72 characters), for a search first: most text has none, and a view can be megabytes.
LINES_KEPT_CLASS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
NONE_KEPT_CLASS = "[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
