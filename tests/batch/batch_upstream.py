"""Loopback upstreams for the batch tests, following the providers' API references (the recorded
fixtures hold no batch traffic):

- OpenAI "Files" (``POST /v1/files`` multipart with ``purpose=batch``; ``GET /v1/files``;
  ``GET /v1/files/{id}/content``) and "Batch" (``POST /v1/batches`` with ``input_file_id``,
  ``endpoint``, ``completion_window``, ``metadata``; ``GET /v1/batches`` and
  ``/v1/batches/{id}`` with ``status`` validating → in_progress → completed and
  ``output_file_id``; ``POST /v1/batches/{id}/cancel``); output lines ``{"id", "custom_id",
  "response": {"status_code", "request_id", "body": <chat completion>}, "error": null}``;
- Gemini API "Batch API" (``POST /v1beta/models/{model}:batchGenerateContent`` with ``batch:
  {displayName, inputConfig: {requests: {requests: [{request, metadata}]}}}`` → an operation
  ``batches/…`` whose ``metadata`` is the batch (``state`` BATCH_STATE_PENDING → _RUNNING →
  _SUCCEEDED) and, once ``done``, ``response.inlinedResponses.inlinedResponses`` in request
  order; ``GET /v1beta/batches`` lists ``operations``; ``POST batches/{id}:cancel``);
- Anthropic "Message Batches" (``POST /v1/messages/batches`` with ``requests: [{custom_id,
  params}]``; ``GET /v1/messages/batches`` and ``/{id}`` with ``processing_status`` and
  ``request_counts``, ``results_url`` once ended; ``GET .../results`` JSONL of ``{"custom_id",
  "result": {"type": "succeeded", "message"}}``; ``POST .../cancel``).

Each answer echoes the request's last user text (``echo: <text>``) with usage of 10 input and 2
output tokens; `creates` and `uploads` count, `hold_create` / `hold_upload` park the request's
answer until released (a client killed meanwhile dies with the step done upstream but not
logged).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    content = messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


class BatchUpstream:
    """OpenAI and Anthropic batch endpoints on one 127.0.0.1 server."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, list[dict[str, Any]]] = {}
        self.creates = 0
        self.uploads = 0
        self.polls_to_finish = 1
        self.malformed_line: int | None = None  # corrupt this output line (0-based)
        self.fail_request: int | None = None  # answer this request with a 400
        self.hold_create: asyncio.Event | None = None
        self.create_seen = asyncio.Event()
        self.hold_upload: asyncio.Event | None = None
        self.upload_seen = asyncio.Event()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> BatchUpstream:
        app = web.Application(client_max_size=1 << 26)
        r = app.router
        r.add_post("/v1/files", self._upload)
        r.add_get("/v1/files", self._list_files)
        r.add_get("/v1/files/{id}/content", self._content)
        r.add_post("/v1/batches", self._create_openai)
        r.add_get("/v1/batches", self._list_openai)
        r.add_get("/v1/batches/{id}", self._get_openai)
        r.add_post("/v1/batches/{id}/cancel", self._cancel_openai)
        r.add_post("/v1/messages/batches", self._create_anthropic)
        r.add_get("/v1/messages/batches", self._list_anthropic)
        r.add_get("/v1/messages/batches/{id}", self._get_anthropic)
        r.add_get("/v1/messages/batches/{id}/results", self._results_anthropic)
        r.add_post("/v1/messages/batches/{id}/cancel", self._cancel_anthropic)
        r.add_post("/v1beta/models/{tail}", self._create_gemini)
        r.add_get("/v1beta/batches", self._list_gemini)
        r.add_get("/v1beta/batches/{id}", self._get_gemini)
        r.add_post("/v1beta/batches/{tail}", self._cancel_gemini)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        for hold in (self.hold_create, self.hold_upload):
            if hold is not None:
                hold.set()
        assert self._runner is not None
        await self._runner.cleanup()

    # ---- OpenAI -------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert form["purpose"] == "batch"
        content = upload.file.read()  # type: ignore[union-attr]
        self.uploads += 1
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "filename": upload.filename,  # type: ignore[union-attr]
            "purpose": "batch",
            "content": content,
        }
        self.upload_seen.set()
        if self.hold_upload is not None:
            await self.hold_upload.wait()
        return web.json_response({k: v for k, v in self.files[file_id].items() if k != "content"})

    async def _list_files(self, request: web.Request) -> web.Response:
        data = [{k: v for k, v in f.items() if k != "content"} for f in self.files.values()]
        return web.json_response({"object": "list", "data": data})

    async def _content(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["id"]]["content"])

    async def _create_openai(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.creates += 1
        batch_id = f"batch_{self.creates}"
        lines = [json.loads(x) for x in self.files[body["input_file_id"]]["content"].splitlines()]
        self.inputs[batch_id] = lines
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "validating",
            "metadata": body.get("metadata"),
            "output_file_id": None,
            "error_file_id": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "polls": 0,
        }
        self.create_seen.set()
        if self.hold_create is not None:
            await self.hold_create.wait()
        return web.json_response(self._public(self.batches[batch_id]))

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if k != "polls"}

    async def _list_openai(self, request: web.Request) -> web.Response:
        data = [self._public(b) for b in self.batches.values() if b["object"] == "batch"]
        return web.json_response({"object": "list", "data": data})

    def _answer_openai(self, position: int, line: dict[str, Any]) -> bytes:
        text = _last_user_text(line["body"]["messages"])
        i = int(line["custom_id"][1:])
        if i == self.fail_request:
            response = {
                "status_code": 400,
                "request_id": f"req_{i}",
                "body": {"error": {"message": "bad request", "type": "invalid_request_error"}},
            }
        else:
            completion = {
                "id": f"chatcmpl-{i}",
                "object": "chat.completion",
                "model": line["body"]["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"echo: {text}"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            }
            response = {"status_code": 200, "request_id": f"req_{i}", "body": completion}
        row = {
            "id": f"batch_req_{i}",
            "custom_id": line["custom_id"],
            "response": response,
            "error": None,
        }
        raw = json.dumps(row).encode()
        return raw[: len(raw) // 2] if position == self.malformed_line else raw

    async def _get_openai(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        batch["polls"] += 1
        if batch["status"] == "cancelling":
            batch["status"] = "cancelled"
        elif batch["status"] not in ("cancelled", "completed"):
            if batch["polls"] >= self.polls_to_finish:
                lines = self.inputs[batch["id"]]
                out = b"\n".join(self._answer_openai(i, x) for i, x in enumerate(reversed(lines)))
                # (reversed: output order is not input order; custom_id says which is which)
                file_id = f"file-out-{batch['id']}"
                self.files[file_id] = {
                    "id": file_id,
                    "object": "file",
                    "filename": "out.jsonl",
                    "purpose": "batch_output",
                    "bytes": len(out),
                    "content": out,
                }
                batch.update(status="completed", output_file_id=file_id)
            else:
                batch["status"] = "in_progress"
        return web.json_response(self._public(batch))

    async def _cancel_openai(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        batch["status"] = "cancelling"
        return web.json_response(self._public(batch))

    # ---- Anthropic ------------------------------------------------------------------------

    async def _create_anthropic(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.creates += 1
        batch_id = f"msgbatch_{self.creates}"
        self.inputs[batch_id] = body["requests"]
        self.batches[batch_id] = {
            "id": batch_id,
            "type": "message_batch",
            "object": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(body["requests"]),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2099-01-01T00:00:00Z",
            "ended_at": None,
            "results_url": None,
            "polls": 0,
        }
        self.create_seen.set()
        if self.hold_create is not None:
            await self.hold_create.wait()
        return web.json_response(self._public(self.batches[batch_id]))

    async def _list_anthropic(self, request: web.Request) -> web.Response:
        data = [self._public(b) for b in self.batches.values() if b.get("type") == "message_batch"]
        return web.json_response({"data": data, "has_more": False})

    async def _get_anthropic(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        batch["polls"] += 1
        if batch["processing_status"] == "canceling" or batch["polls"] >= self.polls_to_finish:
            batch["processing_status"] = "ended"
            batch["results_url"] = f"{self.url}/v1/messages/batches/{batch['id']}/results"
        return web.json_response(self._public(batch))

    async def _results_anthropic(self, request: web.Request) -> web.Response:
        requests = self.inputs[request.match_info["id"]]
        rows = []
        for i, item in enumerate(requests):
            text = _last_user_text(item["params"]["messages"])
            message = {
                "id": f"msg_{i}",
                "type": "message",
                "role": "assistant",
                "model": item["params"]["model"],
                "content": [{"type": "text", "text": f"echo: {text}"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2},
            }
            result: dict[str, Any] = {"type": "succeeded", "message": message}
            if i == self.fail_request:
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "bad request"},
                    },
                }
            rows.append(json.dumps({"custom_id": item["custom_id"], "result": result}))
        return web.Response(body="\n".join(rows).encode())

    async def _cancel_anthropic(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        batch["processing_status"] = "canceling"
        return web.json_response(self._public(batch))

    # ---- Gemini ---------------------------------------------------------------------------

    async def _create_gemini(self, request: web.Request) -> web.Response:
        tail = request.match_info["tail"]
        assert tail.endswith(":batchGenerateContent"), tail
        body = await request.json()
        self.creates += 1
        name = f"batches/gb{self.creates}"
        batch = body["batch"]
        self.inputs[name] = batch["inputConfig"]["requests"]["requests"]
        self.batches[name] = {
            "name": name,
            "metadata": {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                "model": "models/" + tail.split(":")[0],
                "displayName": batch["displayName"],
                "state": "BATCH_STATE_PENDING",
            },
            "polls": 0,
        }
        self.create_seen.set()
        if self.hold_create is not None:
            await self.hold_create.wait()
        return web.json_response(self._public(self.batches[name]))

    async def _list_gemini(self, request: web.Request) -> web.Response:
        ops = [self._public(b) for b in self.batches.values() if "name" in b]
        return web.json_response({"operations": ops})

    async def _get_gemini(self, request: web.Request) -> web.Response:
        op = self.batches["batches/" + request.match_info["id"]]
        op["polls"] += 1
        meta = op["metadata"]
        if meta["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
            if op["polls"] >= self.polls_to_finish:
                out = []
                for i, item in enumerate(self.inputs[op["name"]]):
                    text = "".join(
                        p.get("text", "") for p in item["request"]["contents"][-1]["parts"]
                    )
                    answer = {
                        "candidates": [
                            {
                                "content": {"role": "model", "parts": [{"text": f"echo: {text}"}]},
                                "finishReason": "STOP",
                                "index": 0,
                            }
                        ],
                        "usageMetadata": {
                            "promptTokenCount": 10,
                            "candidatesTokenCount": 2,
                            "totalTokenCount": 12,
                        },
                    }
                    if i == self.fail_request:
                        out.append(
                            {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}
                        )
                    else:
                        out.append({"response": answer, "metadata": item.get("metadata")})
                meta["state"] = "BATCH_STATE_SUCCEEDED"
                op["done"] = True
                op["response"] = {
                    "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
                    "inlinedResponses": {"inlinedResponses": out},
                }
            else:
                meta["state"] = "BATCH_STATE_RUNNING"
        return web.json_response(self._public(op))

    async def _cancel_gemini(self, request: web.Request) -> web.Response:
        tail = request.match_info["tail"]
        assert tail.endswith(":cancel"), tail
        op = self.batches["batches/" + tail.split(":")[0]]
        op["metadata"]["state"] = "BATCH_STATE_CANCELLED"
        op["done"] = True
        return web.json_response({})
