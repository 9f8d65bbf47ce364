"""`michi.shown`: the tables that make anyone's text safe for a terminal, and the classes that find what
they replace, say the same thing."""

from __future__ import annotations

import re

from michi import shown


def test_each_class_finds_exactly_what_its_table_replaces() -> None:
    for table, pattern in (
        (shown.LINES_KEPT, shown.LINES_KEPT_CLASS),
        (shown.NONE_KEPT, shown.NONE_KEPT_CLASS),
    ):
        found = re.compile(pattern)
        assert {c for c in range(0x3000) if found.match(chr(c))} == set(table)


def test_controls_and_bidirectional_overrides_are_replaced_and_line_breaks_kept_where_asked() -> None:
    text = "a\x1b[31m\tb\nc\u202ed\u2066e\u2069f\u200fg\x9b"
    assert text.translate(shown.LINES_KEPT) == "a\ufffd[31m\tb\nc\ufffdd\ufffde\ufffdf\u200fg\ufffd"
    assert text.translate(shown.ONE_LINE) == "a\ufffd[31m b c\ufffdd\ufffde\ufffdf\u200fg\ufffd"
    assert "\t" not in text.translate(shown.NONE_KEPT) and "\n" not in text.translate(shown.NONE_KEPT)
