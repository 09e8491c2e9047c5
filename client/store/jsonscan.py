"""Read one large JSON object member by member, the elements of chosen lists one at a time.

An export of a large store is one JSON document of a few hundred megabytes;
:func:`scan` reads it from a text stream with memory bounded by the largest
element, not the document: each top-level member is yielded as ``("value", key,
value)``, except a member named in ``lists`` whose value is an array, which is
yielded element by element as ``("item", key, element)``.  Any valid JSON
object is read (whitespace, key order and indentation are free).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from typing import Any, TextIO

from ...protocol.errors import InputError

__all__ = ["JsonScanner", "scan"]

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()
_CHUNK = 1 << 16


class JsonScanner:
    """A cursor over a text stream of JSON: whitespace, one character, one value."""

    def __init__(self, stream: TextIO, name: str = "the document") -> None:
        self._stream = stream
        self.name = name
        self._buf = ""
        self._pos = 0
        self._eof = False
        self.consumed = 0
        """Characters dropped from the buffer so far (positions in messages)."""

    def _fill(self, size: int = _CHUNK) -> bool:
        if self._eof:
            return False
        data = self._stream.read(size)
        self.consumed += self._pos
        self._buf, self._pos = self._buf[self._pos :] + data, 0
        if not data:
            self._eof = True
        return bool(data)

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end)."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buf) or not self._fill():
                return buf[pos] if pos < len(buf) else ""

    def expect(self, chars: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            found = "the end of the file" if not char else repr(char)
            raise self.error(f"expected {' or '.join(repr(c) for c in chars)}, found {found}")
        self._pos += 1
        return char

    def value(self) -> Any:
        """The next complete JSON value."""
        self.peek()
        size = _CHUNK
        while True:
            try:
                value, end = _DECODER.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                if self._fill(size):
                    size *= 2  # a long value: read more each time, not quadratically
                    continue
                raise self.error(exc.msg) from None
            except RecursionError:
                raise self.error("arrays or objects nested too deeply") from None
            except ValueError as exc:  # an integer of more digits than int() reads
                raise self.error(str(exc)) from None
            if end == len(self._buf) and self._fill():
                continue  # a number may go on in the next chunk
            self._pos = end
            return value

    def error(self, what: str) -> InputError:
        return InputError(
            f"{self.name} is not JSON ({what} near character {self.consumed + self._pos}); "
            "pass a file made by 'sealmem export'"
        )


def scan(scanner: JsonScanner, lists: Collection[str]) -> Iterator[tuple[str, str, Any]]:
    """The members of the JSON object under ``scanner`` (see the module docstring)."""
    first = scanner.peek()
    if first in ("[", '"') or first.isdigit() or (first in "-tfn" and first):
        kind = type(scanner.value()).__name__
        raise InputError(f"{scanner.name} holds a JSON {kind}, not an export document")
    scanner.expect("{")
    if scanner.peek() == "}":
        scanner.expect("}")
        return
    while True:
        key = scanner.value()
        if not isinstance(key, str):
            raise scanner.error("a member name must be a string")
        scanner.expect(":")
        if key in lists and scanner.peek() == "[":
            scanner.expect("[")
            if scanner.peek() == "]":
                scanner.expect("]")
            else:
                while True:
                    yield "item", key, scanner.value()
                    if scanner.expect(",]") == "]":
                        break
        else:
            yield "value", key, scanner.value()
        if scanner.expect(",}") == "}":
            break
    if scanner.peek():
        raise scanner.error("the document goes on after its closing '}'")
