"""DESIGN §2: the public names are a contract — each importable and callable as written there."""

from __future__ import annotations

import msgspec

import modelwire as mw


def test_vocabulary_names_and_positional_constructors() -> None:
    for name in [
        "TextBlock",
        "ReasoningBlock",
        "ImageBlock",
        "ToolCallBlock",
        "ToolResultBlock",
        "Message",
        "BlockStart",
        "TextDelta",
        "ReasoningDelta",
        "ToolCallDelta",
        "BlockEnd",
        "UsageChunk",
        "Finish",
        "Stop",
        "ToolCalls",
        "MaxTokens",
        "Aborted",
        "Error",
    ]:
        assert isinstance(getattr(mw, name), type), name
    user = mw.user_message("hi")
    assert user.role == "user" and user.content == (mw.TextBlock("hi"),)
    assert mw.user_message([mw.TextBlock("a")]).content == (mw.TextBlock("a"),)
    assert mw.system_message("be brief").role == "system"
    source = mw.ModelSource("deepseek", "deepseek-chat", replay_state=None)
    answer = mw.assistant_message([mw.TextBlock("ok")], source)
    assert (answer.role, answer.source) == ("assistant", source)
    assert mw.UserSource() == mw.UserSource() and mw.PluginSource("p").plugin == "p"
    assert mw.ToolSource("c1").call_id == "c1"
    usage = mw.TokenUsage(10, 5, 2, None, 1)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (10, 5, 2)
    failure = mw.LlmFailure("boom", "SERVER", 503)
    assert msgspec.json.encode(failure) == b'{"message":"boom","code":"SERVER","status":503}'
    options = mw.GenerateOptions("deepseek", "deepseek-chat", [user], system="s", max_tokens=9)
    assert options.messages == (user,)
    assert mw.ReplayEnvelope({"id": "r"}).blocks is None
    assert mw.ToolSchema("t", "d", {"type": "object"}).parameters == {"type": "object"}
    assert mw.CallConfig("deepseek", "deepseek-chat", reasoning_effort="high").max_tokens is None
    for kind, cls in (
        ("stop", mw.Stop),
        ("tool-calls", mw.ToolCalls),
        ("max-tokens", mw.MaxTokens),
    ):
        assert cls().kind == kind
    assert mw.Error(failure).kind == "error" and mw.Aborted(failure).kind == "aborted"


def test_logic_names() -> None:
    asm = mw.BlockAssembler()
    asm.push(mw.TextDelta(0, "x"))
    assert [asm.blocks(), asm.interrupted_blocks(), asm.usage, asm.finish, asm.replay_state] == [
        [mw.TextBlock("x")],
        [mw.TextBlock("x")],
        None,
        mw.Stop(),
        None,
    ]
    assert asm.message(mw.ModelSource("p", "m")).content == (mw.TextBlock("x"),)
    err = mw.LlmError("boom", "SERVER", status=503)
    assert (err.code, err.status, err.failure) == (
        "SERVER",
        503,
        mw.LlmFailure("boom", "SERVER", 503),
    )
    base = mw.HarnessError("bad", "INVALID_CONFIG")
    assert (base.code, base.status, base.failure) == ("INVALID_CONFIG", None, None)
    normal = mw.resolve_retry_policy(None)
    assert isinstance(normal, mw.NormalRetryPolicy)
    assert (normal.max_retries, normal.initial_delay_ms, normal.max_delay_ms) == (2, 500, 10_000)
    always = mw.resolve_retry_policy({"mode": "always", "initial_delay_ms": 5, "max_delay_ms": 9})
    assert isinstance(always, mw.AlwaysRetryPolicy) and always.jitter_ratio == 0.1


def test_runtime_names() -> None:
    rt = mw.LlmRuntime()
    for name in [
        "register_adapter",
        "use",
        "use_generate",
        "on_adapter_change",
        "generate",
        "stream",
        "prepare_call",
        "stream_blocks",
        "list_providers",
        "list_models",
        "resolve_model_info",
        "resolve_call_config",
    ]:
        assert callable(getattr(rt, name)), name
    for name in ("Scope", "Registration", "PreparedCall", "GenerateResult", "LlmAdapter"):
        assert isinstance(getattr(mw, name), type), name


def test_module_level_names() -> None:
    from modelwire.adapters.deepseek import DeepSeekAdapter
    from modelwire.adapters.providers import ProvidersAdapter
    from modelwire.adapters.replay import ReplayAdapter
    from modelwire.agent import Agent, Tool
    from modelwire.meter import TokenMeter
    from modelwire.retry import RetryPlugin
    from modelwire.session import open_log

    assert callable(ProvidersAdapter.from_config) and callable(ReplayAdapter.from_file)
    assert callable(ReplayAdapter.from_log) and callable(TokenMeter.project)
    for value in (DeepSeekAdapter, Agent, Tool, RetryPlugin, open_log):
        assert callable(value)
    assert set(mw.__all__) <= set(dir(mw))


def test_approval_names() -> None:
    """DESIGN §9, human approval: the names a paused turn is handled with."""
    from modelwire.agent import Agent, Tool, TurnResult

    pending = mw.PendingApproval("call-1", "pay", '{"amount": 5}')
    assert (pending.call_id, pending.tool, pending.arguments) == ("call-1", "pay", '{"amount": 5}')
    assert mw.ErrorCode.TOOL_DENIED == "TOOL_DENIED"
    paid = Tool("pay", "Pay.", {"type": "object"}, lambda args: "ok", needs_approval=True)
    assert paid.needs_approval is True

    @mw.tool(needs_approval=lambda ctx, args: args["amount"] > 100)
    def send(amount: int) -> str:
        """Send money."""
        return "sent"

    assert callable(send.needs_approval)
    assert callable(Agent.decide) and callable(Agent.resume_turn) and callable(Agent.pending)
    assert TurnResult.__dataclass_fields__["pending"].default == ()


def test_third_build_embeddings_documents_and_batch_names() -> None:
    """DESIGN §9: the embeddings, documents and batch names, constructed as written there."""
    options = mw.EmbedOptions("openai", "text-embedding-3-small", inputs=["a", "b"])
    assert options.inputs == ("a", "b") and options.dimensions is None
    assert options.encoding_format is None and options.provider_options is None
    result = mw.EmbedResult(
        vectors=([0.5],), usage=mw.TokenUsage(1, 0), provider="p", model="m", dimensions=1
    )
    assert (result.vectors, result.usage) == (([0.5],), mw.TokenUsage(1, 0))
    doc = mw.DocumentBlock("application/pdf", data=b"%PDF", url=None, name="r.pdf")
    assert (doc.type, doc.name) == ("document", "r.pdf")
    assert mw.AudioBlock("audio/wav", b"RIFF").type == "audio"
    assert callable(mw.LlmRuntime().embed)
    from modelwire.batch import BatchJob

    for name in ("submit", "open", "status", "wait", "results", "cancel"):
        assert callable(getattr(BatchJob, name)), name
