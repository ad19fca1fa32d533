"""``memgauge serve-memory``: serve a registered system over the memory protocol v1.1
(docs/memory-protocol.md). The work is in ``systems._serve``; this module is imported only
when ``serve-memory`` is named (``_lazy``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import MemgaugeError
from ..runner import RunConfig
from ..systems._serve import ServeLimits, build_factory, run_server
from ..systems.http_system import read_token
from ._common import fail, parse_options


def serve_memory(
    system: Annotated[str, typer.Option(help="The system to serve (any registered name)")],
    model: Annotated[str, typer.Option(
        help="The model it uses: openai:<model>, local:<smollm2|file.gguf>, none:")] = "none:",
    system_option: Annotated[list[str] | None, typer.Option(
        help="key=value passed to the system (repeatable)")] = None,
    embedder: Annotated[str | None, typer.Option(
        help="The text embedder, as `memgauge run --embedder`")] = None,
    embedder_base_url: Annotated[str | None, typer.Option(
        help="The openai: embedder's endpoint")] = None,
    image_embedder: Annotated[str | None, typer.Option(
        help="rag's image embedder, as `memgauge run --image-embedder`")] = None,
    image_embedder_base_url: Annotated[str | None, typer.Option(
        help="The image embedder's endpoint")] = None,
    host: Annotated[str, typer.Option(help="Address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port)")] = 8765,
    prefix: Annotated[str, typer.Option(help="Path prefix of the routes, e.g. /memory")] = "",
    max_episodes: Annotated[int, typer.Option(
        help="Episodes kept in memory (the least recently used are dropped)")] = 1024,
    token_env: Annotated[str | None, typer.Option(
        help="Env var holding a token every request must bring as `Authorization: Bearer "
        "<token>` (run with --system-option token_env=NAME)")] = None,
    max_body_mib: Annotated[float, typer.Option(
        help="Largest request body, MiB (refused with 413 as it streams in)")] = 32.0,
    header_timeout: Annotated[float, typer.Option(
        help="Seconds a client may take to send a request's head")] = 10.0,
    body_timeout: Annotated[float, typer.Option(
        help="Seconds a client may take to send a request's body")] = 60.0,
    idle_timeout: Annotated[float, typer.Option(
        help="Seconds an idle kept-alive connection stays open")] = 60.0,
    max_connections: Annotated[int, typer.Option(
        help="Connections open at once (more are answered 503)")] = 64,
    allow_image_urls: Annotated[bool, typer.Option(
        "--allow-image-urls", help="Accept https image URLs from clients (the served "
        "system's model fetches them); without it only data: images are taken")] = False,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL")] = None,
    api_key_env: Annotated[str, typer.Option(
        help="Env var holding the API key")] = "OPENAI_API_KEY",
    model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: model (repeatable)")] = None,
    concurrency: Annotated[int, typer.Option(help="Model requests in flight (in all)")] = 8,
    context_mode: Annotated[str, typer.Option(
        help="image | text | caption | no-context")] = "image",
    instruction: Annotated[str, typer.Option(help="direct | cot | reasoning")] = "direct",
    label_images: Annotated[bool, typer.Option(help="Insert [Image N] labels")] = False,
    max_context_tokens: Annotated[int | None, typer.Option(
        help="Prompt limit in cross-modal tokens")] = None,
    overflow: Annotated[str, typer.Option(help="Over the limit: error | drop-oldest")] = "error",
    count_tokens: Annotated[bool, typer.Option(help="Count every prompt's tokens")] = False,
    max_tokens: Annotated[int, typer.Option(help="Generation limit")] = 512,
    temperature: Annotated[float, typer.Option()] = 0.0,
    seed: Annotated[int | None, typer.Option(help="Sampling seed sent to the model")] = None,
    image_max_side: Annotated[int, typer.Option(
        help="Resize images above this side; 0 = never")] = 800,
    image_format: Annotated[str, typer.Option(help="keep | png | jpeg")] = "keep",
    image_mode: Annotated[str, typer.Option(help="inline (data URLs) | url")] = "inline",
    timeout: Annotated[float, typer.Option(
        help="Per-request timeout of the model, seconds")] = 120.0,
    max_attempts: Annotated[int, typer.Option(help="Attempts per model request")] = 6,
    no_cache: Annotated[bool, typer.Option("--no-cache",
                                           help="Do not use the response cache")] = False,
    cache_path: Annotated[str | None, typer.Option(help="Response cache SQLite file")] = None,
) -> None:
    """Serve a memory system over the memory protocol v1.1 (HTTP + JSON), so that
    `memgauge run --system http://HOST:PORT` evaluates it; stop with Ctrl-C."""
    try:
        if max_episodes < 1:
            raise MemgaugeError(f"--max-episodes {max_episodes}: must be at least 1")
        limits = ServeLimits(max_body=int(max_body_mib * (1 << 20)),
                             header_timeout_s=header_timeout, body_timeout_s=body_timeout,
                             idle_timeout_s=idle_timeout, max_connections=max_connections)
        limits.check()
        token = read_token(token_env, f"--token-env {token_env}") if token_env else None
        config = RunConfig(
            bench="-", data="-", out="-", system=system, model=model,
            system_options=parse_options(system_option or []),
            embedder=embedder, embedder_base_url=embedder_base_url,
            image_embedder=image_embedder, image_embedder_base_url=image_embedder_base_url,
            model_options=parse_options(model_option or [], "--model-option"),
            base_url=base_url, api_key_env=api_key_env, concurrency=concurrency,
            context_mode=context_mode, instruction=instruction, label_images=label_images,
            max_context_tokens=max_context_tokens, overflow=overflow,
            count_tokens=count_tokens, max_tokens=max_tokens, temperature=temperature,
            seed=seed, image_max_side=image_max_side or None, image_format=image_format,
            image_mode=image_mode, timeout_s=timeout, max_attempts=max_attempts,
            cache=not no_cache, cache_path=cache_path)
        factory, closers = build_factory(config)
    except MemgaugeError as exc:
        fail(exc)
    try:
        run_server(factory, host, port, prefix, max_episodes, closers,
                   allow_image_urls=allow_image_urls, token=token, limits=limits)
    except OSError as exc:  # the port is taken, the address is not ours
        fail(MemgaugeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}"))
