"""The Responses stream's tables: which output items are content blocks (and of which kind),
which client tools besides functions arrive as tool calls, which items are kept whole without a
report, and which events carry nothing a translation needs."""

from __future__ import annotations

from typing import Final

__all__ = ["CALL_TYPES", "ITEM_KINDS", "KEPT_ITEMS", "QUIET_EVENTS", "SERVER_EVENTS"]

ITEM_KINDS: Final = {
    "reasoning": "reasoning",
    "message": "text",
    "function_call": "tool-call",
    "custom_tool_call": "tool-call",
    "apply_patch_call": "tool-call",
    "local_shell_call": "tool-call",
}
CALL_TYPES: Final = {
    # item type → (call type, the tool's name when the item names none)
    "custom_tool_call": ("custom", None),
    "apply_patch_call": ("apply_patch", "apply_patch"),
    "local_shell_call": ("local_shell", "local_shell"),
}
KEPT_ITEMS: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "compaction",
        "tool_search_call",
        "tool_search_output",
    }
)
"""Items the answer holds that are no content block (kept in the envelope, not reported)."""
QUIET_EVENTS: Final = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
        "response.custom_tool_call_input.done",
        "response.apply_patch_call_operation_diff.delta",
        "response.apply_patch_call_operation_diff.done",
        "keepalive",
    }
)
"""Events that carry nothing a translation needs (their content comes again in the item)."""
SERVER_EVENTS: Final = (
    *tuple(f"response.{kind}." for kind in sorted(KEPT_ITEMS)),
    "response.code_interpreter_call_code.",
    "response.mcp_call_arguments.",
)
"""Prefixes of the progress events of the server tools (`response.web_search_call.searching`)."""
