"""What the generated operation table and domain classes are made of."""

from __future__ import annotations

import http.client
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from ._client import Switchboard

T = TypeVar("T")


@dataclass(frozen=True)
class Operation:
    """One operation of the API, as the OpenAPI document describes it."""

    operation_id: str
    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    #: 'json': the body is an object of ``body_fields``; 'multipart': a file and its fields;
    #: 'raw': any bytes (``content=``) or JSON (``json=``); 'none': no body.
    body: Literal["json", "multipart", "raw", "none"]
    body_fields: tuple[str, ...]
    #: Pages with limit/offset: the method returns a ``Paged`` iterable.
    paged: bool
    #: Where the items of a paged answer are when its data is an object (``agents``), else None.
    items_key: str | None
    #: Needs no credentials (its path or query carries its own proof).
    public: bool
    #: Answers with bytes (a download, an event stream): the method returns a ``StreamedResponse``.
    streamed: bool


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list, with the server's total."""

    items: list[T]
    total: int
    limit: int
    offset: int
    #: The total is an estimate (the list is longer than the server counts exactly).
    total_estimated: bool = False
    #: Lists that page by cursor: pass it as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None = None


class Paged(Generic[T]):
    """Every item of a list operation, fetched a page at a time as the iteration goes
    (``limit`` sets the page size, ``offset`` or ``cursor`` where to start). A list that pages by
    cursor is followed by its ``next_cursor``, so a deep page costs what the first does. Iterating
    twice asks again."""

    def __init__(self, fetch: Callable[[int, int, str | None], Page[T]], limit: int, offset: int, cursor: str | None = None) -> None:
        self._fetch = fetch
        self._limit = limit
        self._offset = offset
        self._cursor = cursor

    def page(self) -> Page[T]:
        """Only the first page (``limit`` items from ``offset`` or ``cursor``), with the total."""
        return self._fetch(self._limit, self._offset, self._cursor)

    def __iter__(self) -> Iterator[T]:
        offset, cursor = self._offset, self._cursor
        while True:
            page = self._fetch(self._limit, offset, cursor)
            yield from page.items
            offset += len(page.items)
            if not page.items or len(page.items) < self._limit:
                return
            # A list that pages by cursor goes on while it gives one; by offset, up to its total (unless estimated).
            if page.next_cursor is not None:
                cursor = page.next_cursor
            elif cursor is not None or (not page.total_estimated and offset >= page.total):
                return

    def to_list(self) -> list[T]:
        return list(self)


class StreamedResponse:
    """An answer read as it arrives (a download, the event stream): ``read``, ``iter_bytes`` or
    ``iter_lines``, then ``close`` (or use it as a context manager). Its connection is its own."""

    def __init__(self, response: http.client.HTTPResponse, connection: http.client.HTTPConnection) -> None:
        self._response = response
        self._connection = connection
        self.status = response.status
        self.headers = {key.lower(): value for key, value in response.getheaders()}

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")

    def read(self, size: int = -1) -> bytes:
        return self._response.read(size) if size >= 0 else self._response.read()

    def iter_bytes(self, chunk_size: int = 64 * 1024) -> Iterator[bytes]:
        while chunk := self._response.read(chunk_size):
            yield chunk

    def iter_lines(self) -> Iterator[str]:
        while line := self._response.readline():
            yield line.decode("utf-8").rstrip("\r\n")

    def close(self) -> None:
        self._response.close()
        self._connection.close()

    def __enter__(self) -> StreamedResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Domain:
    """A group of operations (``client.messaging``…); the generated subclasses add one method each."""

    def __init__(self, client: Switchboard, name: str, table: dict[str, Operation]) -> None:
        self._client = client
        self._name = name
        self._table = table

    def _call(self, method: str, arguments: dict[str, Any]) -> Any:
        return self._client._invoke(self._table[method], arguments)
