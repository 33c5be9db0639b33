"""Uploads a file of any size as an artifact, streamed (never read whole), and downloads it again.
    SWITCHBOARD_URL=... SWITCHBOARD_API_KEY=sk_... python3 examples/upload.py report.pdf
"""

from __future__ import annotations

import os
import sys

from switchboard import Switchboard


def main(client: Switchboard, path: str) -> dict:
    with open(path, "rb") as file:
        # An upload URL is created, the bytes are PUT to it as they are read, and the upload confirmed.
        artifact = client.artifacts.upload_stream(file, name=os.path.basename(path), content_type="application/octet-stream", metadata={"source": "examples/upload.py"})
    with open(path + ".downloaded", "wb") as copy:
        client.artifacts.download_to(artifact["id"], copy)
    return dict(artifact)


if __name__ == "__main__":
    client = Switchboard(os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:8080"), api_key=os.environ["SWITCHBOARD_API_KEY"])
    print(main(client, sys.argv[1]))
