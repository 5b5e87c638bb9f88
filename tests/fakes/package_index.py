"""A package registry of the tests' own on 127.0.0.1: a PEP 503 simple index serving one
wheel and an npm registry serving one tarball, both built here from source text, so a
setup script's real ``pip install`` and ``npm install`` have somewhere to go that is
not the internet. Every request is counted (``hits``): what reached it, and when."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import zipfile
from types import TracebackType

from aiohttp import web

WHEEL_PKG = "tinydep"
WHEEL_NAME = "tinydep-1.0-py3-none-any.whl"
NPM_PKG = "tinynode"
NPM_TGZ = "tinynode-1.0.0.tgz"


def build_wheel(value: int = 42) -> bytes:
    """A pure-Python wheel: ``import tinydep; tinydep.VALUE``."""
    files = {
        f"{WHEEL_PKG}/__init__.py": f"VALUE = {value}\n".encode(),
        "tinydep-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n",
        "tinydep-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: fetch-tests\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("tinydep-1.0.dist-info/RECORD,,")
    files["tinydep-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


def build_tarball(value: int = 7) -> bytes:
    """An npm package: ``require('tinynode').value``."""
    files = {
        "package/package.json": json.dumps(
            {"name": NPM_PKG, "version": "1.0.0", "main": "index.js"}
        ).encode(),
        "package/index.js": f"module.exports = {{ value: {value} }};\n".encode(),
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


class PackageIndex:
    """``async with PackageIndex() as index``: ``index.url`` is its base."""

    def __init__(self) -> None:
        self.wheel = build_wheel()
        self.tarball = build_tarball()
        self.hits: list[str] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> PackageIndex:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.hits.append(path)
        if path in ("/simple/", "/simple"):
            return web.Response(
                text=f'<a href="/simple/{WHEEL_PKG}/">{WHEEL_PKG}</a>', content_type="text/html"
            )
        if path.rstrip("/") == f"/simple/{WHEEL_PKG}":
            sha = hashlib.sha256(self.wheel).hexdigest()
            return web.Response(
                text=f'<a href="/files/{WHEEL_NAME}#sha256={sha}">{WHEEL_NAME}</a>',
                content_type="text/html",
            )
        if path == f"/files/{WHEEL_NAME}":
            return web.Response(body=self.wheel, content_type="application/octet-stream")
        if path == f"/{NPM_PKG}":
            integrity = "sha512-" + base64.b64encode(hashlib.sha512(self.tarball).digest()).decode()
            meta = {
                "name": NPM_PKG,
                "dist-tags": {"latest": "1.0.0"},
                "versions": {
                    "1.0.0": {
                        "name": NPM_PKG,
                        "version": "1.0.0",
                        "main": "index.js",
                        "dist": {
                            "tarball": f"{self.url}/{NPM_PKG}/-/{NPM_TGZ}",
                            "shasum": hashlib.sha1(self.tarball).hexdigest(),
                            "integrity": integrity,
                        },
                    }
                },
            }
            return web.json_response(meta)
        if path == f"/{NPM_PKG}/-/{NPM_TGZ}":
            return web.Response(body=self.tarball, content_type="application/octet-stream")
        return web.Response(status=404, text="not here")


__all__ = ["NPM_PKG", "WHEEL_PKG", "PackageIndex", "build_tarball", "build_wheel"]
