"""The WhatsApp pairing QR code as an SVG Fetch draws itself (segno: no service, no
script). The SVG holds only path data and the fixed attributes given here, so a code
from WhatsApp cannot put markup in the page."""

from __future__ import annotations

import io

MAX_CODE_CHARS = 2048  # WhatsApp's codes are ~250 characters; anything far bigger is junk


def qr_svg(code: str) -> bytes:
    if not code or len(code) > MAX_CODE_CHARS:
        raise ValueError("no pairing code to draw")
    import segno  # only when a pairing code is drawn: not needed to start

    out = io.BytesIO()
    segno.make_qr(code, error="l").save(
        out, kind="svg", scale=6, border=2, xmldecl=False, svgns=True, title="WhatsApp pairing"
    )
    return out.getvalue()


__all__ = ["qr_svg"]
