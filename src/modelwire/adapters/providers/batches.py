"""Provider batch APIs of a providers route: OpenAI (``/v1/files`` + ``/v1/batches``),
Anthropic Message Batches (``/v1/messages/batches``) and Gemini API batch mode
(``models/{model}:batchGenerateContent`` with inlined requests, a ``batches/…`` operation), one
HTTP call per method, each through
the route's transport settings and auth, failures mapped as a chat call's (`failure_for_status`
and the protocol's refinement). The durable job around these calls is `modelwire.batch`.

Lookups make a crash recoverable without a duplicate: an OpenAI input file is named
``<job_id>.jsonl`` and the batch carries ``metadata.modelwire_job``, so `find_file` and
`find_batch` list them; Anthropic batches carry no metadata, so `find_batch` takes the newest one
created at or after the job's create started with the job's request count; a Gemini batch's
``displayName`` is the job id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

import msgspec

from ...errors import ErrorCode, LlmError
from ...runtime import GenerateResult
from ...vocab import GenerateOptions
from ...wire.attribution import attribution_headers
from ...wire.credentials import credential_values
from ...wire.h1transport import fetch
from ...wire.http import transport_failure
from ...wire.status import failure_for_status
from ...wire.transport import Request, Transport
from .config import ResolvedProfile
from .credentials import auth_headers, resolve_route_key
from .dispatch import _check, _effort, _request, resolve_endpoint
from .documents import check_media
from .materialize import ModelDescriptor
from .protocols import protocol
from .protocols.spec import WireProtocol
from .snapshot import Snapshot

__all__ = ["BatchInfo", "RouteBatches", "route_batches"]

_APIS: Final = {
    "openai-completions": "openai",
    "openai-responses": "openai",
    "anthropic-messages": "anthropic",
    "google-generative-ai": "gemini",
}
_GEMINI_ENDED: Final = {
    "BATCH_STATE_SUCCEEDED": "ended",
    "BATCH_STATE_CANCELLED": "ended",
    "BATCH_STATE_EXPIRED": "ended",
    "BATCH_STATE_FAILED": "failed",
}
_MAX_BODY: Final = 1 << 30


class BatchInfo(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A batch as the provider describes it: its status in modelwire's words (``running``,
    ``ended``, ``canceling``, ``failed``), the provider's own, and where the results are."""

    batch_id: str
    status: str
    provider_status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    results_url: str | None = None


class RouteBatches:
    """The batch calls of one route (see the module docstring)."""

    def __init__(
        self,
        profile: ResolvedProfile,
        carrier: ModelDescriptor,
        spec: WireProtocol,
        api: str,
        env: Mapping[str, str],
        transport: Transport | None,
        snapshot: Snapshot,
    ) -> None:
        self.profile = profile
        self.api = api
        self._carrier = carrier
        self._spec = spec
        self._env = env
        self._transport = transport
        self._snapshot = snapshot
        base = carrier.base_url.rstrip("/")
        if api == "anthropic":
            base += "" if base.endswith("/v1") else "/v1"
        self._root = base

    # ---- the request lines --------------------------------------------------------------

    def request_bodies(self, requests: Sequence[GenerateOptions]) -> list[bytes]:
        """The streaming chat body of each request, built as a call of the route builds it."""
        out = []
        for options in requests:
            profile, model = _check(self._snapshot, options)
            if self.api == "openai":
                model = msgspec.structs.replace(model, api="openai-completions")
            model = resolve_endpoint(profile, model, self._env)
            check_media(options.messages, model)
            spec = protocol(model.api)
            effort = _effort(profile, model, options, spec)
            built = _request(spec, profile, model, effort, options, options.messages, None, None)
            out.append(built.body)
        return out

    def request_lines(self, requests: Sequence[GenerateOptions]) -> list[bytes]:
        """The batch entries (JSON lines) of `requests`, custom ids ``r0``, ``r1``, ..."""
        from .batch_wire import request_line

        bodies = self.request_bodies(requests)
        return [
            json.dumps(request_line(self.api, i, body)).encode() for i, body in enumerate(bodies)
        ]

    # ---- HTTP -----------------------------------------------------------------------------

    async def _call(
        self, method: str, path: str, body: bytes = b"", content_type: str = "application/json"
    ) -> bytes:
        profile = self.profile
        key = None if profile.auth == "none" else resolve_route_key(profile, self._env)
        headers = {"Accept": "application/json", **dict(self._carrier.headers)}
        if body:
            headers["Content-Type"] = content_type
        headers.update(auth_headers(profile, self._spec, key))
        for name, value in profile.headers:
            headers[name] = value
        headers.update(attribution_headers())
        url = path if path.startswith("http") else self._root + path
        request = Request(
            method, url, headers=headers, body=body, settings=profile.transport_settings
        )
        try:
            reply = await fetch(request, transport=self._transport, max_bytes=_MAX_BODY)
        except (OSError, ValueError, RuntimeError) as exc:
            what = f"{profile.display_name} batch request to {self._root} failed"
            raise transport_failure(what, exc, credential_values(headers)) from exc
        if not 200 <= reply.status < 300:
            text = reply.body[: 1 << 20].decode("utf-8", "replace")
            error = failure_for_status(
                reply.status,
                text,
                reply.headers,
                provider=profile.display_name,
                secrets=credential_values(headers),
            )
            refine = self._spec.http_error
            raise error if refine is None else refine(error, text, reply.headers, ())
        return reply.body

    async def _json(self, method: str, path: str, body: object | None = None) -> dict[str, object]:
        raw = await self._call(method, path, b"" if body is None else json.dumps(body).encode())
        document = json.loads(raw)
        if not isinstance(document, dict):
            raise LlmError(
                f"{self.profile.route}: batch answer is not an object", ErrorCode.MALFORMED_RESPONSE
            )
        return document

    # ---- OpenAI ---------------------------------------------------------------------------

    async def upload(self, job_id: str, lines: Sequence[bytes]) -> str:
        """Upload the input file ``<job_id>.jsonl``; its file id."""
        boundary = "modelwire-" + os.urandom(12).hex()
        content = b"\n".join(lines) + b"\n"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{job_id}.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n'
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )
        raw = await self._call("POST", "/files", body, f"multipart/form-data; boundary={boundary}")
        return str(json.loads(raw)["id"])

    async def find_file(self, job_id: str) -> str | None:
        """The input file already uploaded for `job_id`, if any."""
        listing = await self._json("GET", "/files?purpose=batch")
        for item in listing.get("data") or ():  # type: ignore[attr-defined]
            if isinstance(item, dict) and item.get("filename") == f"{job_id}.jsonl":
                return str(item["id"])
        return None

    # ---- both -----------------------------------------------------------------------------

    async def create(
        self, job_id: str, file_id: str | None, lines: Sequence[bytes], model: str
    ) -> str:
        """Create the batch; its id (Gemini: the operation name ``batches/…``)."""
        if self.api == "gemini":
            resource = model if model.startswith("models/") else f"models/{model}"
            inline = {"requests": [json.loads(line) for line in lines]}
            batch = {"batch": {"displayName": job_id, "inputConfig": {"requests": inline}}}
            return str(
                (await self._json("POST", f"/{resource}:batchGenerateContent", batch))["name"]
            )
        if self.api == "openai":
            body: object = {
                "input_file_id": file_id,
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
                "metadata": {"modelwire_job": job_id},
            }
            return str((await self._json("POST", "/batches", body))["id"])
        requests = [json.loads(line) for line in lines]
        return str((await self._json("POST", "/messages/batches", {"requests": requests}))["id"])

    async def find_batch(self, job_id: str, count: int, since_ms: int) -> str | None:
        """The batch already created for `job_id`, if any (see the module docstring)."""
        if self.api == "gemini":
            listing = await self._json("GET", "/batches")
            for item in listing.get("operations") or ():  # type: ignore[attr-defined]
                meta = item.get("metadata") if isinstance(item, dict) else None
                if isinstance(meta, dict) and meta.get("displayName") == job_id:
                    return str(item["name"])
            return None
        if self.api == "openai":
            listing = await self._json("GET", "/batches?limit=100")
            for item in listing.get("data") or ():  # type: ignore[attr-defined]
                meta = item.get("metadata") if isinstance(item, dict) else None
                if isinstance(meta, dict) and meta.get("modelwire_job") == job_id:
                    return str(item["id"])
            return None
        listing = await self._json("GET", "/messages/batches?limit=100")
        for item in listing.get("data") or ():  # type: ignore[attr-defined]
            if not isinstance(item, dict):
                continue
            counts = item.get("request_counts") or {}
            created = datetime.fromisoformat(str(item.get("created_at")).replace("Z", "+00:00"))
            total = sum(v for v in counts.values() if isinstance(v, int))
            if total == count and created.timestamp() * 1000 >= since_ms - 1000:
                return str(item["id"])
        return None

    async def retrieve(self, batch_id: str) -> BatchInfo:
        """The batch's state now."""
        if self.api == "gemini":
            doc = await self._json("GET", f"/{batch_id}")
            meta = doc.get("metadata")
            raw = str(meta.get("state") if isinstance(meta, dict) else "BATCH_STATE_UNSPECIFIED")
            return BatchInfo(
                batch_id=batch_id, status=_GEMINI_ENDED.get(raw, "running"), provider_status=raw
            )
        if self.api == "openai":
            doc = await self._json("GET", f"/batches/{batch_id}")
            raw = str(doc.get("status"))
            status = {
                "completed": "ended",
                "cancelled": "ended",
                "expired": "ended",
                "failed": "failed",
                "cancelling": "canceling",
            }.get(raw, "running")
            return BatchInfo(
                batch_id=batch_id,
                status=status,
                provider_status=raw,
                output_file_id=_text(doc.get("output_file_id")),
                error_file_id=_text(doc.get("error_file_id")),
            )
        doc = await self._json("GET", f"/messages/batches/{batch_id}")
        raw = str(doc.get("processing_status"))
        status = {"ended": "ended", "canceling": "canceling"}.get(raw, "running")
        return BatchInfo(
            batch_id=batch_id,
            status=status,
            provider_status=raw,
            results_url=_text(doc.get("results_url")),
        )

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch."""
        path = {
            "openai": f"/batches/{batch_id}/cancel",
            "gemini": f"/{batch_id}:cancel",
        }.get(self.api, f"/messages/batches/{batch_id}/cancel")
        await self._json("POST", path, {})

    async def result_documents(self, info: BatchInfo) -> list[bytes]:
        """The result files' bytes (OpenAI: output then error file; Anthropic: the JSONL;
        Gemini: the operation, whose response holds the inlined responses)."""
        if self.api == "gemini":
            return [await self._call("GET", f"/{info.batch_id}")]
        if self.api == "openai":
            ids = [i for i in (info.output_file_id, info.error_file_id) if i]
            return [await self._call("GET", f"/files/{i}/content") for i in ids]
        if info.results_url is None:
            return []
        return [await self._call("GET", info.results_url)]

    def results(self, documents: Sequence[bytes], count: int, model: str) -> list[GenerateResult]:
        """One result per request in order (`batch_wire.read_results`)."""
        from .batch_wire import read_results

        return read_results(self.api, documents, count, provider=self.profile.route, model=model)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def route_batches(
    snapshot: Snapshot, provider: str, env: Mapping[str, str], transport: Transport | None
) -> RouteBatches:
    """The batch calls of route `provider` (``UNSUPPORTED_OPTION`` unless it speaks OpenAI's,
    Anthropic's or the Gemini API)."""
    profile = snapshot.profiles.get(provider)
    if profile is None:
        raise LlmError(f'no provider route "{provider}" is configured', ErrorCode.NO_ADAPTER)
    carrier = next(iter(profile.models.values()), None)
    api = _APIS.get(carrier.api) if carrier is not None else None
    if carrier is None or api is None:
        raise LlmError(
            f'provider "{provider}" has no batch API here: batches run on OpenAI, Anthropic and '
            "Gemini API routes",
            ErrorCode.UNSUPPORTED_OPTION,
        )
    carrier = resolve_endpoint(profile, carrier, env)
    return RouteBatches(profile, carrier, protocol(carrier.api), api, env, transport, snapshot)
