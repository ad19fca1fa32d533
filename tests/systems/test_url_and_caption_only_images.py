"""LoCoMo in the default image mode: a photo kept only as a URL goes by its URL (never
fetched), one kept only as a caption goes as its caption, an inline data: URL as itself;
a missing file is left out (docs/design/0004), never replaced by its caption."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from memgauge.cli import app

runner = CliRunner()


def _png_data_url() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), "red").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _conversation(tmp_path: Path) -> Path:
    turns = [
        {"speaker": "A", "dia_id": "D1:1", "text": "Look at my dog!",
         "img_url": ["https://example.org/dog.jpg"], "blip_caption": "a photo of a dog"},
        {"speaker": "B", "dia_id": "D1:2", "text": "And my cat.",
         "blip_caption": "a photo of a grey cat"},
        {"speaker": "A", "dia_id": "D1:3", "text": "A red square.", "img_url": [_png_data_url()]},
    ]
    conv = {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": turns,
            "qa": [{"question": "What colour was B's cat?", "answer": "grey",
                    "evidence": ["D1:2"], "category": 4}]}
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(conv))
    return path


def _parts(body: dict) -> list[dict]:
    out = []
    for m in body["messages"]:
        c = m["content"]
        out.extend([{"type": "text", "text": c}] if isinstance(c, str) else c)
    return out


@pytest.mark.parametrize("mode", ["inline", "url"])
def test_locomo_runs_in_either_image_mode(tmp_path: Path, stub, mode: str) -> None:
    data = _conversation(tmp_path)
    got = runner.invoke(app, ["run", "--bench", "locomo", "--data", str(data), "--out",
                              str(tmp_path / "r"), "--model", "openai:m", "--base-url",
                              stub.base_url, "--image-mode", mode])
    assert got.exit_code == 0, got.output
    record = json.loads((tmp_path / "r" / "records.jsonl").read_text())
    assert record["status"] == "ok"
    (body,) = stub.requests
    parts = _parts(body)
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert urls[0] == "https://example.org/dog.jpg"  # by URL: nothing fetched
    assert urls[1].startswith("data:image/png;base64,")
    assert len(urls) == 2
    texts = "\n".join(p["text"] for p in parts if p["type"] == "text")
    assert "[Image: a photo of a grey cat]" in texts  # the caption stands in
    assert "a photo of a dog" not in texts  # an image that is sent is not also captioned


def test_labelled_caption_stand_ins_keep_their_number() -> None:
    from memgauge.models._base import ImagePart, TextPart
    from memgauge.prompt import turn_parts
    from memgauge.schema import ImageRef

    only_caption = ImageRef(source="D1:2:blip_caption", captions={"generic": "a grey cat"},
                            meta={"caption_only": True})
    with_file = ImageRef(source="x.png", path="/data/x.png")
    parts, nxt = turn_parts("two photos", [with_file, only_caption], "image", True, 4)
    assert nxt == 6
    assert [type(p) for p in parts] == [TextPart, ImagePart, TextPart, TextPart, TextPart]
    assert [p.text for p in parts if isinstance(p, TextPart)] == [
        "[Image 5]", "[Image 6]", "[Image: a grey cat]", "two photos"]


def test_the_run_says_at_start_that_public_photo_urls_go_to_the_endpoint(tmp_path: Path,
                                                                        stub) -> None:
    """Issue 29: LoCoMo's 908 photo URLs went to the endpoint without a word. The count is
    of photos known only by a public URL (an inline data: URL is not one)."""
    data = _conversation(tmp_path)
    got = runner.invoke(app, ["run", "--bench", "locomo", "--data", str(data), "--out",
                              str(tmp_path / "r"), "--model", "openai:m", "--base-url",
                              stub.base_url])
    assert got.exit_code == 0, got.output
    lines = [" ".join(x.split()) for x in got.output.splitlines() if x.strip()]
    note = ("note: LoCoMo in image mode sends its 1 shared photo to the endpoint as public "
            "URLs, for the endpoint to fetch from the web; --context-mode caption sends their "
            "BLIP captions instead")
    assert lines[1] == note, lines  # at start: right after the endpoint line
    sent = len(stub.requests)
    caption = runner.invoke(app, ["run", "--bench", "locomo", "--data", str(data), "--out",
                                  str(tmp_path / "c"), "--model", "openai:m", "--base-url",
                                  stub.base_url, "--context-mode", "caption"])
    assert "public URLs" not in caption.output
    # This conversation also holds an inline image with no caption: caption mode is refused
    # before the first request (issue 29 §2), so nothing at all goes out.
    assert caption.exit_code == 2 and "--captioner" in caption.output, caption.output
    assert len(stub.requests) == sent
