"""Types of the bytes the client sends."""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO, Union

#: Raw bytes to send as they are: bytes, text (UTF-8), a binary file object (read in chunks, never
#: whole) or an iterable of byte chunks (sent with chunked transfer encoding).
Content = Union[bytes, bytearray, memoryview, str, BinaryIO, Iterable[bytes]]

#: The file of a multipart upload: bytes, or a binary file object that is streamed.
FileInput = Union[bytes, bytearray, BinaryIO]
