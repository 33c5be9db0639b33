"""A 50 MB artifact goes up and comes back streamed, with flat memory: neither side holds it."""

from __future__ import annotations

import hashlib
import io
import resource
import sys
from collections.abc import Iterator

from switchboard import Switchboard

SIZE = 50 * 1024 * 1024
BLOCK = 1024 * 1024


class Generated(io.RawIOBase):
    """SIZE pseudo-random-looking bytes, made as they are read (never all in memory)."""

    def __init__(self) -> None:
        self.position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), SIZE - self.position)
        if count <= 0:
            return 0
        block = hashlib.sha256(str(self.position // BLOCK).encode()).digest() * (BLOCK // 32)
        start = self.position % BLOCK
        chunk = (block[start:] + block)[:count]
        buffer[:count] = chunk
        self.position += count
        return count


def expected_sha256() -> str:
    digest = hashlib.sha256()
    source = Generated()
    while chunk := source.read(BLOCK):
        digest.update(chunk)
    return digest.hexdigest()


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def chunks(response_iter: Iterator[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in response_iter:
        digest.update(chunk)
    return digest.hexdigest()


def test_a_50_mb_round_trip_streams_both_ways(admin: Switchboard) -> None:
    sha256 = expected_sha256()
    before = peak_rss_mb()
    # Not seekable, so its size is given; the bytes are PUT as they are read.
    artifact = admin.artifacts.upload_stream(io.BufferedReader(Generated(), BLOCK), name="big.bin", size=SIZE, sha256=sha256)
    assert artifact["size_bytes"] == SIZE and artifact["sha256"] == sha256
    with admin.artifacts.download(artifact_id=artifact["id"]) as response:
        assert chunks(response.iter_bytes(BLOCK)) == sha256
    # The multipart upload streams a file object too.
    version = admin.artifacts.upload_version(artifact_id=artifact["id"], file=io.BufferedReader(Generated(), BLOCK), name="big.bin")
    assert version["version"] == 2
    sink = hashlib.sha256()

    class Sink(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: bytes) -> int:  # type: ignore[override]
            sink.update(data)
            return len(data)

    assert admin.artifacts.download_to(artifact["id"], Sink()) == SIZE  # type: ignore[arg-type]
    assert sink.hexdigest() == sha256
    growth = peak_rss_mb() - before
    assert growth < 25, f"peak memory grew by {growth:.1f} MB moving 3 × 50 MB"
