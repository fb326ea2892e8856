"""The DeepSeek adapter (hand-written, OpenAI-compatible SSE over the shared wire).

Only the adapter and its configuration types are public here; the serializer, SSE framing,
translator and status mapping are internal.
"""

from .adapter import DeepSeekAdapter
from .models import DeepSeekConfig, DeepSeekModel, DeepSeekReasoning

__all__ = ["DeepSeekAdapter", "DeepSeekConfig", "DeepSeekModel", "DeepSeekReasoning"]
