"""A PEP 517 build backend with the standard library alone, so that `pip install ./clients/python`
works offline (`--no-build-isolation`) on a machine without setuptools' wheel support: it packs
src/switchboard into a pure-Python wheel (and an sdist, and an editable wheel with a .pth)."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _field(name: str) -> str:
    match = re.search(rf'^{name}\s*=\s*"([^"]*)"', PYPROJECT, re.MULTILINE)
    assert match, f"pyproject.toml has no {name}"
    return match.group(1)


NAME, VERSION = _field("name"), _field("version")
DIST = f"{NAME}-{VERSION}"


def _metadata() -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {VERSION}",
        f"Summary: {_field('description')}",
        f"Requires-Python: {_field('requires-python')}",
        "License: MIT",
        "Provides-Extra: signing",
        "Requires-Dist: cryptography>=3.4; extra == 'signing'",
        "Description-Content-Type: text/markdown",
        "",
        (ROOT / "README.md").read_text(),
    ]
    return "\n".join(lines)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _wheel(directory: str, files: dict[str, bytes]) -> str:
    name = f"{DIST}-py3-none-any.whl"
    info = f"{DIST}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": _metadata().encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: switchboard_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(path, data) for path, data in files.items()] + [f"{info}/RECORD,,"]
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return name


def _package_files() -> dict[str, bytes]:
    package = ROOT / "src" / "switchboard"
    return {
        f"switchboard/{path.relative_to(package).as_posix()}": path.read_bytes()
        for path in sorted(package.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def get_requires_for_build_wheel(config_settings: object = None) -> list[str]:
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: object = None, metadata_directory: object = None) -> str:
    return _wheel(wheel_directory, _package_files())


def build_editable(wheel_directory: str, config_settings: object = None, metadata_directory: object = None) -> str:
    return _wheel(wheel_directory, {f"__editable__.{NAME}.pth": f"{ROOT / 'src'}\n".encode()})


def build_sdist(sdist_directory: str, config_settings: object = None) -> str:
    name = f"{DIST}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for path in sorted(ROOT.rglob("*")):
            relative = path.relative_to(ROOT)
            if path.is_file() and not {"__pycache__", ".pytest_cache"} & set(relative.parts):
                sdist.add(path, f"{DIST}/{relative.as_posix()}")
        data = _metadata().encode()
        info = tarfile.TarInfo(f"{DIST}/PKG-INFO")
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
