"""rag's image embedder (retriever=visual|hybrid with image_embedder=openai:<model>): the
requests it sends (vLLM's chat-style shape by default, data URLs of the resized image), the
ranking from the endpoint's vectors, the cache of image vectors, malformed replies."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from embeddings_server import EmbeddingsServer, decode, image_urls
from PIL import Image
from rag_helpers import chosen, episode, question, run, turn

from memgauge.cache import ResponseCache
from memgauge.errors import ConfigError
from memgauge.media import ImagePolicy
from memgauge.models import ModelError
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.retrieval import STAND_IN
from memgauge.schema import ImageRef, Session
from memgauge.systems import SystemContext


def _png(path: Path, colour: tuple[int, int, int], size: int = 64) -> ImageRef:
    Image.new("RGB", (size, size), colour).save(path)
    return ImageRef(source=path.name, path=str(path), width=size, height=size)


@pytest.fixture
def photos(tmp_path: Path) -> dict[str, ImageRef]:
    return {"red": _png(tmp_path / "red.png", (220, 10, 10)),
            "green": _png(tmp_path / "green.png", (10, 200, 10)),
            "blue": _png(tmp_path / "blue.png", (10, 10, 220)),
            "query_green": _png(tmp_path / "qg.png", (30, 180, 40))}


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    with EmbeddingsServer() as s:
        yield s


def _sessions(p: dict[str, ImageRef]) -> list[Session]:
    # the words say nothing of the colours: only the image vectors can rank them
    return [Session(session_id=f"s{i}", date=f"d{i}", turns=[
                turn(f"t{i}", "user", f"Photo number {i} <image>", [p[c]])])
            for i, c in enumerate(("red", "green", "blue"), 1)]


def _make(server: EmbeddingsServer, *, max_side: int | None = 800,
          cache: ResponseCache | None = None, **options: Any) -> Any:
    opts = {"retriever": "visual", "unit": "turn", "top_k": 1,
            "image_embedder": f"openai:{server.model}", "image_embedder_base_url": server.url,
            **options}
    ctx = SystemContext(model=ScriptedModel(fn=lambda m, q: "answer"),
                        image_policy=ImagePolicy(max_side=max_side), cache=cache,
                        options={k: str(v) for k, v in opts.items()})
    return lookup("system", "rag")(ctx)()


def test_visual_ranks_by_the_endpoints_image_vectors(server: EmbeddingsServer,
                                                     photos: dict[str, ImageRef]) -> None:
    made = _make(server, top_k=3)
    r_text, r_image = run(made, episode(_sessions(photos), [
        question("Which photo showed something blue?", "q1"),
        question("Which photo looks like this one?", "q2", images=[photos["query_green"]])]))
    ranking = [it.pointer.session_id for it in r_text.retrieved]
    assert ranking[0] == "s3"  # blue: the text's vector [0, 0, 1] against the mean colours
    assert chosen(r_image)[0] == ("s2", "t2")  # the green query image: nearest the green photo
    described = made.describe()
    assert described["image_embedder"] == "openai:clip-test"
    assert "clip-test" in described["image_similarity"]
    assert described["image_similarity"] != STAND_IN
    assert "embedder" not in described  # visual with an image embedder embeds no text itself


def test_without_an_image_embedder_the_stand_in_stays_and_says_so(
        photos: dict[str, ImageRef]) -> None:
    ctx = SystemContext(model=ScriptedModel(fn=lambda m, q: "a"),
                        options={"retriever": "visual"})
    made = lookup("system", "rag")(ctx)()
    assert made.describe()["image_similarity"] == STAND_IN
    assert "image_embedder" not in made.describe()


def test_requests_carry_data_urls_of_the_resized_image_in_vllms_shape(
        server: EmbeddingsServer, photos: dict[str, ImageRef]) -> None:
    made = _make(server, max_side=32)
    run(made, episode(_sessions(photos), [question("something red")]))
    images = server.image_requests()
    assert len(images) == 3
    for body in images:
        assert body["path"] == "/v1/embeddings"
        assert body["model"] == "clip-test"
        assert body["encoding_format"] == "float"
        assert set(body) == {"path", "model", "encoding_format", "messages"}
        [message] = body["messages"]
        assert message["role"] == "user"
        [part] = message["content"]
        assert part["type"] == "image_url"
        assert decode(part["image_url"]["url"]).size == (32, 32)  # as the run sends images
    # the question's text goes to the same model as text input
    assert [b["input"] for b in server.text_requests()] == [["something red"]]
    assert all(b["model"] == "clip-test" for b in server.text_requests())


def test_the_input_shape_sends_image_items(server: EmbeddingsServer,
                                           photos: dict[str, ImageRef]) -> None:
    made = _make(server, image_embedder_shape="input")
    [r] = run(made, episode(_sessions(photos), [question("something green")]))
    assert chosen(r) == [("s2", "t2")]
    body = server.image_requests()[0]
    assert "messages" not in body and list(body["input"][0]) == ["image"]
    assert decode(image_urls(body)[0]).size == (64, 64)


def test_an_image_is_embedded_once_and_a_second_run_asks_for_none(
        server: EmbeddingsServer, photos: dict[str, ImageRef], tmp_path: Path) -> None:
    sessions = [*_sessions(photos), Session(session_id="s4", turns=[
        turn("t4", "user", "The red one again <image>", [photos["red"]])])]
    ep = episode(sessions, [question("something red")])
    cache = ResponseCache(tmp_path / "cache.sqlite")
    try:
        run(_make(server, cache=cache), ep)
        assert len(server.image_requests()) == 3  # red is held twice, asked for once
        server.bodies.clear()
        second = _make(server, cache=cache, top_k=2)  # a new run: a new embedder
        [r] = run(second, ep)
    finally:
        cache.close()
    assert server.image_requests() == []
    assert second._image_embedder.encoder.encodes == 0  # found by its hash: never resized
    assert len(server.text_requests()) == 1  # the question is still embedded
    assert {c[0] for c in chosen(r)} == {"s1", "s4"}  # the cached vectors rank as before


def test_an_unreadable_image_is_an_input_error_naming_it(server: EmbeddingsServer,
                                                         photos: dict[str, ImageRef]) -> None:
    from memgauge.errors import InputError

    Path(photos["green"].path).unlink()  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"green\.png.*cannot be read for the image embedder"):
        run(_make(server), episode(_sessions(photos), [question("red")]))


def _one_row_too_many(body: dict[str, Any]) -> Any:
    return {"data": [{"index": 0, "embedding": [1.0, 0, 0]},
                     {"index": 1, "embedding": [0, 1.0, 0]}]}


def _not_numbers(body: dict[str, Any]) -> Any:
    return {"data": [{"index": 0, "embedding": ["1", "0", "0"]}]}


def _all_zero(body: dict[str, Any]) -> Any:
    return {"data": [{"index": 0, "embedding": [0, 0, 0]}]}


@pytest.mark.parametrize(("reply", "says"), [
    (_one_row_too_many, r"data\[\]\.embedding is not usable .*2 embeddings for 1 inputs"),
    (_not_numbers, r"data\[\]\.embedding is not usable .*'1' is not a finite number"),
    (_all_zero, r"data\[\]\.embedding is not usable .*all-zero row"),
])
def test_a_malformed_reply_is_an_error_naming_the_endpoint_and_field(
        server: EmbeddingsServer, photos: dict[str, ImageRef], reply: Any, says: str,
        tmp_path: Path) -> None:
    server.override = [reply]
    cache = ResponseCache(tmp_path / "cache.sqlite")
    try:
        with pytest.raises(ModelError, match=f"{server.url}/embeddings: the reply's {says}"):
            run(_make(server, cache=cache), episode(_sessions(photos), [question("red")]))
        server.bodies.clear()
        run(_make(server, cache=cache), episode(_sessions(photos), [question("red")]))
    finally:
        cache.close()
    assert len(server.image_requests()) == 3  # the failed image was not cached: asked again


def test_vectors_of_another_size_than_the_earlier_ones_are_an_error(
        server: EmbeddingsServer, photos: dict[str, ImageRef]) -> None:
    server.override = [lambda b: {"data": [{"index": 0, "embedding": [0.5, 0.5, 0.1]}]},
                       lambda b: {"data": [{"index": 0, "embedding": [0.5, 0.5, 0.1, 0.2]}]}]
    made = _make(server)

    async def go() -> None:
        for s in _sessions(photos):
            await made.ingest(s)

    with pytest.raises(ModelError, match=r"/v1/embeddings: the reply's data\[\]\.embedding "
                                         r"has 4 numbers where this endpoint's earlier "
                                         r"embeddings had 3"):
        asyncio.run(go())


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_hybrid_fuses_bm25_with_the_image_vectors(server: EmbeddingsServer,
                                                  photos: dict[str, ImageRef],
                                                  fusion: str) -> None:
    sessions = _sessions(photos)
    sessions[0].turns[0].text = "Photo of the lake <image>"  # the words point at s1 ...
    made = _make(server, retriever="hybrid", text_retriever="bm25", fusion=fusion, top_k=3)
    [r] = run(made, episode(sessions, [question("the lake photo that was blue")]))
    top2 = [it.pointer.session_id for it in r.retrieved][:2]
    assert set(top2) == {"s1", "s3"}  # ... the image vectors at s3 (blue): both sides count
    assert made.describe()["fusion"] == fusion


@pytest.mark.parametrize(("options", "says"), [
    ({"retriever": "bm25"}, "image_embedder: retriever=bm25 compares no images"),
    ({"image_embedder": "clip"}, "image_embedder 'clip': use one of openai:<model>"),
    ({"image_embedder_base_url": ""},
     "image_embedder openai:clip-test needs --system-option image_embedder_base_url"),
    ({"image_embedder_shape": "form"}, "image_embedder_shape=form: use messages or input"),
    ({"embedder": "model2vec"}, "embedder: retriever=visual embeds no text"),
])
def test_image_embedder_mistakes_are_config_errors(server: EmbeddingsServer,
                                                   options: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        _make(server, **options)
    assert server.bodies == []
