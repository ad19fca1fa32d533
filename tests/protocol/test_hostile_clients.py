"""``serve-memory`` facing clients it should not trust: image URLs that would make its model
read this machine's files or a cloud metadata address, images that are not images."""

from __future__ import annotations

import base64
import http.client
import io
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from helpers import prompt_digest, served
from PIL import Image
from stub_server import StubServer


def call(url: str, route: str, obj: Any = None, headers: dict[str, str] | None = None,
         ) -> tuple[int, Any]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        body = None if obj is None else json.dumps(obj).encode()
        conn.request("GET" if obj is None else "POST", parts.path + route, body=body,
                     headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def png_data_url() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), "red").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def image(url: str | None = None, data_url: str | None = None) -> dict[str, Any]:
    return {"image_index": 0, "sha256": "0" * 64, "mime": "image/png", "data_url": data_url,
            "url": url, "caption": None}


def ingest(eid: str, images: list[dict[str, Any]]) -> dict[str, Any]:
    return {"episode_id": eid, "session": {"session_id": "s1", "date": None, "turns": [
        {"turn_id": "s1:1", "role": "user", "text": "look", "images": images}]}}


def question(images: list[dict[str, Any]]) -> dict[str, Any]:
    return {"question_id": "q1", "text": "What is in the picture?", "date": None,
            "images": images, "options": None}


HOSTILE = ["file:///etc/passwd", "../../etc/passwd", "/etc/passwd",
           "http://169.254.169.254/latest/meta-data/", "https://169.254.169.254.nip.io/x.png"]


@pytest.fixture
def model():
    with StubServer(answer=prompt_digest) as stub:
        yield stub


@pytest.mark.parametrize("image_mode", ["inline", "url"])
def test_image_urls_are_refused_without_the_opt_in(model, image_mode) -> None:
    with served("full-context", model="openai:stub", base_url=model.base_url,
                image_mode=image_mode) as url:
        assert call(url, "/reset", {"episode_id": "e"})[0] == 200
        for bad in HOSTILE:
            status, body = call(url, "/ingest", ingest("e", [image(url=bad)]))
            assert status == 400, (bad, body)
            assert "session.turns[0].images[0].url" in body["error"]["message"]
            status, body = call(url, "/answer", {"episode_id": "e",
                                                 "question": question([image(url=bad)])})
            assert status == 400 and "question.images[0].url" in body["error"]["message"]
    assert not any(bad in json.dumps(r) for r in model.requests for bad in HOSTILE)


def test_with_the_opt_in_only_https_urls_pass(model) -> None:
    with served("full-context", model="openai:stub", base_url=model.base_url,
                image_mode="url", service_options={"allow_image_urls": True}) as url:
        assert call(url, "/reset", {"episode_id": "e"})[0] == 200
        for bad in HOSTILE[:4]:
            status, body = call(url, "/ingest", ingest("e", [image(url=bad)]))
            assert status == 400 and "images[0].url" in body["error"]["message"], bad
        ok = "https://example.org/cat.png"
        assert call(url, "/ingest", ingest("e", [image(url=ok)]))[0] == 200
        status, _ = call(url, "/answer", {"episode_id": "e", "question": question([])})
        assert status == 200
    sent = json.dumps(model.requests)
    assert ok in sent and not any(bad in sent for bad in HOSTILE[:4])


def test_data_images_are_checked_and_a_url_beside_them_is_not_forwarded(model) -> None:
    with served("full-context", model="openai:stub", base_url=model.base_url,
                image_mode="url") as url:
        assert call(url, "/reset", {"episode_id": "e"})[0] == 200
        fake = "data:image/png;base64," + base64.b64encode(b"not an image").decode()
        status, body = call(url, "/ingest", ingest("e", [image(data_url=fake)]))
        assert status == 400 and "images[0].data_url" in body["error"]["message"]
        status, body = call(url, "/ingest", ingest("e", [image(url=fake)]))
        assert status == 400 and "images[0].url" in body["error"]["message"]
        real = png_data_url()
        both = image(url="file:///etc/passwd", data_url=real)
        assert call(url, "/ingest", ingest("e", [both]))[0] == 200
        status, _ = call(url, "/answer", {"episode_id": "e", "question": question([])})
        assert status == 200
    sent = json.dumps(model.requests)
    assert "file:///etc/passwd" not in sent and "data:image/png;base64," in sent
