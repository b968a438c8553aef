"""Errors of the software switch's front end and compiler."""

from __future__ import annotations


class P4Error(Exception):
    """An error in a P4 program, located as file:line:col (the format of compilers)."""

    def __init__(
        self, message: str, file: str | None = None, line: int | None = None, col: int | None = None
    ):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.file is None:
            return f"error: {self.message}"
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return f"{where}: error: {self.message}"


def not_utf8(e: UnicodeDecodeError) -> str:
    """Why an input file is not UTF-8 text: its first bad byte and that byte's offset (the
    compiler and the STF and topology readers all say it the same way, after the file name)."""
    bad = e.object[e.start:e.start + 1].hex() if isinstance(e.object, (bytes, bytearray)) else "?"
    return f"not UTF-8 text (byte 0x{bad} at offset {e.start})"
