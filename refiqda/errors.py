"""Errors raised while reading or writing REFI-QDA files."""

from __future__ import annotations


class QdpxError(ValueError):
    """A REFI-QDA file cannot be read safely or correctly.

    The message names the file (and line or element where known), so it can be
    shown to a researcher as it is.
    """

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        self.detail = message
        super().__init__(f"{where}: {message}" if where else message)


class UnsafeInputError(QdpxError):
    """The input looks hostile: entity expansion, external entities, ZIP bomb, path traversal."""
