"""The request body goes out as pieces (images are not copied into one buffer)."""

from __future__ import annotations

import asyncio

from memgauge.models.openai_compat import _pieces_payload


class _Writer:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    async def write(self, chunk: bytes) -> None:
        self.chunks.append(bytes(chunk))


def test_pieces_payload_writes_every_piece_under_one_length():
    pieces = [b'{"messages": [{"url": "', b"data:image/png;base64,AAAA", b'"}]}', b""]
    payload = _pieces_payload(pieces)
    assert payload.size == sum(map(len, pieces))
    assert payload.content_type == "application/json"
    assert asyncio.run(payload.as_bytes()) == b"".join(pieces)
    assert payload.decode() == b"".join(pieces).decode()
    full, cut = _Writer(), _Writer()
    asyncio.run(payload.write(full))
    asyncio.run(payload.write_with_length(cut, 30))
    assert b"".join(full.chunks) == b"".join(pieces)
    assert b"".join(cut.chunks) == b"".join(pieces)[:30]
    again = _Writer()  # a retry sends the same body again
    asyncio.run(payload.write(again))
    assert again.chunks == full.chunks
