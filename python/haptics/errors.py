"""The exceptions of the ``haptics`` package.

Every error the package raises is a :class:`haptics.Error`. Each also subclasses the
builtin a caller would catch without knowing this package: a malformed file or a bad
argument is a ``ValueError``, a missing file a ``FileNotFoundError``. Where the error is
in a file, ``path`` names it and ``line`` (text formats) or ``offset`` (binary formats)
says where; ``expected`` says what the format requires there.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "Error",
    "FormatError",
    "InputError",
    "MissingFileError",
    "ReadError",
    "InternalError",
]


class Error(Exception):
    """Base class of every exception this package raises."""

    path: Optional[str]
    line: Optional[int]
    offset: Optional[int]
    expected: Optional[str]

    def __init__(
        self,
        message: str,
        *,
        path: Optional[str] = None,
        line: Optional[int] = None,
        offset: Optional[int] = None,
        expected: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.offset = offset
        self.expected = expected

    def __str__(self) -> str:
        return self.message


class FormatError(Error, ValueError):
    """A file is not what its format requires (``path``, ``line`` or ``offset``,
    ``expected``)."""


class InputError(Error, ValueError):
    """An argument has the wrong shape or value (a state that is not a unit quaternion,
    a start in collision, an unknown option)."""


class MissingFileError(Error, FileNotFoundError):
    """A file does not exist (``path``)."""

    def __init__(self, message: str, **where: object) -> None:
        Error.__init__(self, message, **where)  # type: ignore[arg-type]
        self.filename = where.get("path")
        self.errno = 2
        self.strerror = message


class ReadError(Error, OSError):
    """The operating system failed to read or write a file (``path``)."""

    def __init__(self, message: str, **where: object) -> None:
        Error.__init__(self, message, **where)  # type: ignore[arg-type]
        self.filename = where.get("path")


class InternalError(Error):
    """A bug in the package (a Rust panic, caught at the boundary). Please report it."""
