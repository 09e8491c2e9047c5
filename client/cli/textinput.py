"""Memory text given on the command line: the argument, or stdin for ``-``; UTF-8 only."""

from __future__ import annotations

import sys

from ...protocol.errors import InputError

__all__ = ["read_content"]

_CONVERT = "convert it to UTF-8 first (e.g. iconv -f latin1 -t utf-8 FILE | sealmem remember -)"


def read_content(text: str) -> str:
    """The memory text: the argument, or all of stdin for ``-``; refused unless UTF-8."""
    where = "the memory text"
    if text == "-":
        where = "stdin"
        stream = sys.stdin
        if stream is None:
            raise InputError("'-' reads the memory from stdin, but there is no stdin")
        raw = getattr(stream, "buffer", None)
        if raw is None:
            text = stream.read()
        else:  # decode here: the locale may have turned bad bytes into surrogates
            data = raw.read()
            try:
                return str(data.decode("utf-8"))
            except UnicodeDecodeError as exc:
                bad = data[exc.start : exc.start + 4].hex(" ")
                raise InputError(
                    f"stdin is not UTF-8 text (byte {exc.start} is {bad}): {_CONVERT}; "
                    "nothing was stored"
                ) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes the locale could not decode, kept as surrogates
        raise InputError(
            f"{where} is not UTF-8 text (character {exc.start}): {_CONVERT}; nothing was stored"
        ) from None
    return text
