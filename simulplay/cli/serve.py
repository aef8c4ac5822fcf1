"""``serve``: a TTS backend as an OpenAI-compatible speech API."""

from __future__ import annotations

import sys

import typer


def serve(
    backend: str = typer.Option("piper", "--backend", help="Request backend to serve: piper[:…], "
                                "xtts:model_dir=PATH[,…] (every setting is a parameter)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free port, printed)."),
    model: str | None = typer.Option(None, "--model", help="Model id clients must send "
                                     "(default: the backend's label, e.g. piper:en_US-joe-medium)."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Name of an environment variable "
                                           "holding the API key clients must send (Authorization: Bearer)."),
    quiet: bool = typer.Option(False, "--quiet", help="No request log on stderr."),
    workers: int = typer.Option(1, "--workers", min=1, help="K backend instances, each loaded and warmed up "
                                "(K × the memory and threads). A request takes a free one for its whole "
                                "synthesis; requests that find all K busy wait in one queue, without limit, "
                                "and are served first in, first out. 1: one request at a time."),
    voice_alias: list[str] = typer.Option([], "--voice-alias", help="NAME=VOICE: requests naming voice NAME "
                                          "(e.g. alloy) are spoken by the served VOICE (repeatable); '*': any "
                                          "name is. Default: only the served voice's name (or none)."),
):
    """Serve a TTS backend as an OpenAI-compatible speech API (POST /v1/audio/speech).

    The backend loads and warms up before the server listens. Requests are synthesized by
    --workers K instances (default one at a time; beyond K they wait, first in, first out;
    docs/many-listeners.md); each chunk the backend yields is sent as it is produced
    (chunked transfer) for response_format mp3 (the default), opus and pcm (16-bit
    little-endian mono; the rate in the X-Sample-Rate header); flac and wav arrive whole
    (?wav=stream streams wav). X-Voice names the voice that spoke. GET
    /v1/simulplay/identity returns the backend identity (with workers: K) that the http
    client backend records. Synthesize against it with
    --backend http:base_url=http://HOST:PORT/v1,model=MODEL. Stop with Ctrl-C.
    """
    from simulplay.backends import parse_backend
    from simulplay.workflows.server import log_stderr, make_server, serve_until_interrupted

    config = parse_backend(backend)
    server = make_server([config.create() for _ in range(workers)], host, port, model=model, api_key_env=api_key_env,
                         log=None if quiet else log_stderr, voice_aliases=voice_alias)
    typer.echo(f"serving model '{server.model}' (voice '{server.voice}', {workers} worker(s)) at {server.url}")
    sys.stdout.flush()
    serve_until_interrupted(server)
