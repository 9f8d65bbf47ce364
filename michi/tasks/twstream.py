"""`task export` output read a block at a time (ADR 0015): a JSON array (json.array=on), or one JSON object
per line (Taskwarrior's default, commas between them allowed), as `task import` takes both.

Memory holds one block and the task being read, never the file: a 50,000-task export is 15 MB of text and
~100 MB as Python objects. A value that is still incomplete after `MAX_VALUE` characters is refused.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import IO, Any

from michi.errors import UsageError
from michi.tasks.model import MAX_DEPTH, MAX_TASK_BYTES
from michi.tasks.serialization import LONE_SURROGATE, lone_surrogate, strict_decoder

BLOCK = 1 << 20
# A task file may hold 1 MiB; its export (escapes, Taskwarrior's extra keys) a few times that at most.
MAX_VALUE = 8 * MAX_TASK_BYTES
_SPACE = " \t\n\r"


def _refuse(why: str) -> UsageError:
    return UsageError(f"not Taskwarrior JSON: {why}", hint="pass the output of 'task export'")


class _Reader:
    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.pos, self.eof, self.consumed = "", 0, False, 0

    def more(self) -> bool:
        """Read the next block; False at the end of the input."""
        if self.eof:
            return False
        block = self.source.read(BLOCK)
        try:
            text = self.decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            raise _refuse(f"not UTF-8 ({exc.reason})") from None
        self.consumed += self.pos
        self.buf, self.pos = self.buf[self.pos :] + text, 0
        self.eof = not block
        return True

    def peek(self, skip: str) -> str:
        """The next character that is not in `skip` ("" at the end), consuming what it skips."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in skip:
                pos += 1
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self.more():
                return ""

    def value(self, number: int) -> Any:
        """The next value, the export's `number`th (1 for the first)."""
        decode = strict_decoder().raw_decode
        while True:
            try:
                start = self.pos
                found, self.pos = decode(self.buf, start)
                if lone_surrogate(self.buf[start : self.pos], found):
                    raise _refuse(f"the task at character {self.consumed + start + 1} {LONE_SURROGATE}")
                return found
            except RecursionError:
                raise _refuse(f"nested deeper than {MAX_DEPTH} levels") from None
            except ValueError as exc:
                if not self._truncated(exc):  # NaN or Infinity, bad JSON, or no more input to wait for
                    raise _refuse(_where(exc, self.consumed)) from None
                if len(self.buf) - self.pos > MAX_VALUE:
                    raise self._too_long(number) from None
                self.more()

    def _too_long(self, number: int) -> UsageError:
        """The value at `pos` is longer than any task file's export: named by its number, where it starts
        and its first characters (Taskwarrior writes `id` and `description` first), never read on."""
        head = " ".join(self.buf[self.pos : self.pos + 60].split())
        return UsageError(
            f"record {number} of the import file (character {self.consumed + self.pos + 1}: {head!r}...) "
            f"is more than {MAX_VALUE:,} characters: no task file (at most {MAX_TASK_BYTES:,} bytes) could "
            "hold it",
            hint="remove that record or shorten its text, then import again",
        )

    def _truncated(self, exc: ValueError) -> bool:
        """Did the decoder stop at the end of what has been read so far (a value cut by the block)?"""
        pos, msg = getattr(exc, "pos", None), getattr(exc, "msg", "")
        if pos is None or self.eof:
            return False
        return pos >= len(self.buf) - 8 or msg.startswith("Unterminated string")


def _where(exc: ValueError, consumed: int) -> str:
    pos = getattr(exc, "pos", None)
    msg = getattr(exc, "msg", None)
    return str(exc) if pos is None or msg is None else f"{msg} (character {consumed + pos + 1})"


def items(source: IO[bytes]) -> Iterator[Any]:
    """Every value of the export, in order (a single object is one value)."""
    reader = _Reader(source)
    number = 0
    if reader.peek(_SPACE) == "[":
        reader.pos += 1
        closed = False
        while (char := reader.peek(_SPACE + ",")) != "":
            if char == "]":
                reader.pos += 1
                closed = True
                break
            number += 1
            yield reader.value(number)
        if not closed:
            raise _refuse("the array is not closed")
        if reader.peek(_SPACE) != "":
            raise _refuse("more text after the array")
        return
    while reader.peek(_SPACE + ",") != "":
        number += 1
        yield reader.value(number)
