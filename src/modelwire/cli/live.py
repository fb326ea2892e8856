"""The live view of an agent turn: chunks as they stream, retries as they are decided, tool results.

`LiveView` plugs into the two public seams: a runtime `llm/stream` middleware (every chunk of
every attempt passes through it on its way to the agent loop) and an agent plugin whose
`on_request_error` listener reports the retry plugin's decision, read back from the durable
`llm/retry` event. Install the view's plugin *before* `RetryPlugin` so it sees the decision.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, TypeGuard

from rich.console import Console
from rich.text import Text

from ..session import LlmRetry
from ..vocab import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    GenerateOptions,
    ImageBlock,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from .render import ChunkPrinter, block_text

if TYPE_CHECKING:
    from ..agent import Agent
    from ..agent.hooks import RequestErrorContext, Retry, ToolEnd, ToolHookContext
    from ..agent.tools import Tool, ToolResultValue
    from ..vocab.json import JsonValue

__all__ = ["LiveView"]


def _is_block(value: object) -> TypeGuard[ContentBlock]:
    return isinstance(
        value,
        (
            TextBlock,
            ReasoningBlock,
            ImageBlock,
            DocumentBlock,
            AudioBlock,
            ToolCallBlock,
            ToolResultBlock,
        ),
    )


class LiveView:
    """Renders one agent's model traffic on `console` while it happens."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.printer = ChunkPrinter(console)
        self.retries: list[LlmRetry] = []
        self._shown: set[str] = set()  # tools whose results `show_tool` prints

    async def middleware(
        self,
        options: GenerateOptions,
        call_next: Callable[..., AsyncIterator[StreamChunk]],
    ) -> AsyncIterator[StreamChunk]:
        """`llm/stream` middleware: print each chunk, pass it on unchanged."""
        self.printer = ChunkPrinter(self.console)
        try:
            async for chunk in call_next():
                self.printer.push(chunk)
                yield chunk
        finally:
            self.printer.close()

    def install(self, agent: Agent) -> Callable[[], None]:
        """Agent plugin hook: report each retry the downstream listeners decide, and the results
        of the tools `show_tool` does not wrap (an MCP server's)."""
        disposers = (
            agent.hooks.on_request_error.add(self._on_request_error),
            agent.hooks.on_tool.add(self._on_tool),
        )

        def dispose() -> None:
            for each in disposers:
                each()

        return dispose

    async def _on_tool(
        self, ctx: ToolHookContext, call_next: Callable[[], Awaitable[ToolEnd]]
    ) -> None:
        outcome = await call_next()
        if ctx.call.name in self._shown:
            return
        text = " ".join(block_text(block) for block in outcome.message.content)
        style = "red" if outcome.is_error else "cyan"
        self.console.print(
            Text.assemble(("← ", style), (ctx.call.name, f"bold {style}"), (f" = {text}", style))
        )

    async def _on_request_error(
        self, ctx: RequestErrorContext, call_next: Callable[[], Awaitable[Retry | None]]
    ) -> Retry | None:
        decision = await call_next()
        if decision is None:
            return None
        event = await ctx.log.latest(ctx.session_id, "llm/retry")
        if event is not None and isinstance(event.data, LlmRetry):
            retry = event.data
            self.retries.append(retry)
            limit = f"/{retry.max_retries}" if retry.max_retries is not None else ""
            failure = retry.failure
            status = f", HTTP {failure.status}" if failure.status is not None else ""
            self.console.print(
                Text(
                    f"↻ retry {retry.retry}{limit} of step {retry.step} after "
                    f"{retry.delay_ms:.0f} ms ({failure.code}{status})",
                    style="yellow",
                )
            )
        return decision

    def show_tool(self, tool: Tool) -> Tool:
        """`tool` with its results printed as they are produced."""
        import inspect

        from ..agent.tools import Tool

        inner = tool.fn
        console = self.console
        self._shown.add(tool.name)

        async def shown(args: dict[str, JsonValue]) -> ToolResultValue:
            outcome = inner(args)
            result = await outcome if inspect.isawaitable(outcome) else outcome
            shown = result
            if isinstance(result, (list, tuple)) and all(_is_block(b) for b in result):
                shown = " ".join(block_text(b) for b in result)
            console.print(
                Text.assemble(("← ", "cyan"), (tool.name, "bold cyan"), (f" = {shown}", "cyan"))
            )
            return result

        return Tool(tool.name, tool.description, tool.parameters, shown)
