"""rag's retrievers (embed, visual, hybrid; an OpenAI-compatible embeddings endpoint), what
images=keep|caption|drop puts in the prompt, and the rag-bm25/rag-embed aliases."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rag_helpers import chosen, episode, make, prompt_images, prompt_text, question, run, turn

from memgauge.analysis import rank_sessions
from memgauge.schema import ImageRef, Session


def _png(path: Path, colour: tuple[int, int, int], stripes: bool = False) -> ImageRef:
    im = Image.new("RGB", (64, 64), colour)
    if stripes:
        for x in range(0, 64, 8):
            im.paste((255, 255, 255), (x, 0, x + 4, 64))
    im.save(path)
    return ImageRef(source=path.name, path=str(path), width=64, height=64)


@pytest.fixture
def pictures(tmp_path: Path) -> dict[str, ImageRef]:
    red = _png(tmp_path / "red.png", (200, 20, 20))
    blue = _png(tmp_path / "blue.png", (20, 20, 200), stripes=True)
    red.captions["gold"] = "a red bicycle leaning on a wall"
    blue.captions["gold"] = "a striped blue beach towel"
    return {"red": red, "blue": blue, "query_red": _png(tmp_path / "q.png", (190, 30, 25))}


def _photo_sessions(p: dict[str, ImageRef]) -> list[Session]:
    return [Session(session_id="s1", date="d1", turns=[
                turn("t1", "user", "Look at this <image>", [p["red"]]),
                turn("t2", "assistant", "Nice.")]),
            Session(session_id="s2", date="d2", turns=[
                turn("t3", "user", "And this one <image>", [p["blue"]]),
                turn("t4", "assistant", "Lovely.")]),
            Session(session_id="s3", date="d3", turns=[turn("t5", "user", "We ate pasta.")])]


def test_embed_retriever_finds_the_semantic_match() -> None:
    sessions = [Session(session_id="a", turns=[turn("t1", "user", "My dog loves the park.")]),
                Session(session_id="b", turns=[turn("t2", "user", "Interest rates rose again.")])]
    made, _ = make(retriever="embed", unit="turn", top_k=1)
    [r] = run(made, episode(sessions, [question("What does my dog love?")]))
    assert chosen(r) == [("a", "t1")]
    assert made.describe()["embedder"] == "model2vec"


def test_visual_matches_a_question_image_by_appearance(pictures: dict[str, ImageRef]) -> None:
    made, _ = make(retriever="visual", unit="turn", top_k=1)
    q = question("Which photo is like this one?", images=[pictures["query_red"]])
    [r] = run(made, episode(_photo_sessions(pictures), [q]))
    assert chosen(r) == [("s1", "t1")]
    assert r.retrieved[0].score > r.retrieved[1].score
    assert "stand-in" in made.describe()["image_similarity"]


def test_visual_matches_a_text_question_against_captions(pictures: dict[str, ImageRef]) -> None:
    made, _ = make(retriever="visual", unit="turn", top_k=1)
    [r] = run(made, episode(_photo_sessions(pictures), [question("the striped beach towel")]))
    assert chosen(r) == [("s2", "t3")]


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_hybrid_mixes_text_and_image_similarity(pictures: dict[str, ImageRef],
                                                 fusion: str) -> None:
    # the text points at s3 (pasta), the question image at s1: both outrank s2
    made, _ = make(retriever="hybrid", text_retriever="bm25", fusion=fusion, unit="session",
                   top_k=2)
    q = question("pasta", images=[pictures["query_red"]])
    [r] = run(made, episode(_photo_sessions(pictures), [q]))
    assert sorted(s for s, _ in chosen(r)) == ["s1", "s3"]
    assert made.describe()["fusion"] == fusion


def test_images_keep_sends_the_retrieved_images(pictures: dict[str, ImageRef]) -> None:
    made, model = make(unit="turn", top_k=1, images="keep")
    [r] = run(made, episode(_photo_sessions(pictures), [question("And this one")]))
    assert chosen(r) == [("s2", "t3")]
    assert prompt_images(model.calls[0][0]) == [pictures["blue"]]
    assert r.meta["n_images"] == 1 and made.modality == "image"


def test_images_caption_replaces_them(pictures: dict[str, ImageRef]) -> None:
    made, model = make(unit="turn", top_k=1, images="caption")
    run(made, episode(_photo_sessions(pictures), [question("And this one")]))
    assert prompt_images(model.calls[0][0]) == []
    assert "[Image: a striped blue beach towel]" in prompt_text(model.calls[0][0])
    assert made.modality == "caption"


def test_images_drop_sends_neither(pictures: dict[str, ImageRef]) -> None:
    made, model = make(unit="turn", top_k=1, images="drop")
    run(made, episode(_photo_sessions(pictures), [question("And this one")]))
    shown = prompt_text(model.calls[0][0])
    assert prompt_images(model.calls[0][0]) == [] and "towel" not in shown
    assert "And this one" in shown


@pytest.mark.parametrize("alias", ["rag-bm25", "rag-embed"])
def test_aliases_choose_and_describe_as_before(alias: str) -> None:
    sessions = [Session(session_id=f"s{i}", date=f"d{i}",
                        turns=[turn(f"t{i}", "user", f"entry {i} mentions {w}")])
                for i, w in enumerate(["apples", "boats", "apples and boats", "clouds"] * 3)]
    q = question("apples boats")
    made, _ = make(alias, top_k=3)
    [r] = run(made, episode(sessions, [q]))
    before = rank_sessions(sessions, q.text, alias.removeprefix("rag-"))
    assert [(it.pointer.session_id, it.score) for it in r.retrieved] == \
        [(sid, pytest.approx(score)) for sid, score in before]
    assert [it.chosen for it in r.retrieved] == [True] * 3 + [False] * 9
    assert all(it.pointer.turn_id is None for it in r.retrieved)
    assert made.describe() == {"name": alias, "top_k": 3, "reader": "model",
                               "context_mode": "image"}


class _Embeddings:
    """A loopback /v1/embeddings server: bag-of-words vectors over a fixed vocabulary."""

    VOCAB = ("dog", "park", "rates", "bank", "cat")

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append({"path": self.path, **body})
                data = [{"index": i, "embedding": [float(w in t.lower()) + 0.01
                                                   for w in outer.VOCAB]}
                        for i, t in enumerate(body["input"])]
                raw = json.dumps({"data": data[::-1]} if outer.status == 200
                                 else {"error": "boom"}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def embeddings() -> Iterator[_Embeddings]:
    server = _Embeddings()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _dog_sessions() -> list[Session]:
    return [Session(session_id="a", turns=[turn("t1", "user", "The bank raised rates.")]),
            Session(session_id="b", turns=[turn("t2", "user", "My dog runs in the park.")])]


def test_openai_embedder_ranks_by_the_endpoint_vectors(embeddings: _Embeddings) -> None:
    made, _ = make(retriever="embed", unit="turn", top_k=1, embedder="openai:tiny-embed",
                   embedder_base_url=embeddings.url)
    [r] = run(made, episode(_dog_sessions(), [question("where does the dog play? park")]))
    assert chosen(r) == [("b", "t2")]
    assert embeddings.bodies[0]["path"] == "/v1/embeddings"
    assert embeddings.bodies[0]["model"] == "tiny-embed"
    # one call per session at ingest, then one for the question: never the units again
    assert [b["input"] for b in embeddings.bodies] == [
        ["The bank raised rates."], ["My dog runs in the park."],
        ["where does the dog play? park"]]
    assert made.describe()["embedder"] == "openai:tiny-embed"


def test_openai_embedder_failure_names_the_endpoint(embeddings: _Embeddings) -> None:
    from memgauge.models import ModelError

    embeddings.status = 500
    made, _ = make(retriever="embed", embedder="openai:tiny-embed",
                   embedder_base_url=embeddings.url)
    with pytest.raises(ModelError, match=r"/v1/embeddings answered 500"):
        run(made, episode(_dog_sessions(), [question("dog")]))
