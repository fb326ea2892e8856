"""`PreparedCall`: one call frozen against the registration current at prepare time (§6.10).

It captures the route's adapter and retry policy, the resolved call config, the model context and
the markers of what the adapter defaulted, all from one exact-model lookup. It dispatches once;
config drift is refused with `INVALID_PREPARED_CALL`; a later replace or disposal of the route
does not move it (the old adapter serves it and `retry_policy` stays the old policy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeAlias

from ..errors import ErrorCode, LlmError
from ..policy import RetryPolicy
from ..vocab import (
    AdapterDefaults,
    CallConfig,
    GenerateOptions,
    ModelContext,
    ResolvedModelInfo,
    call_config_equals,
)
from .boundary import ChunkStream
from .registry import Route

__all__ = ["CONFIG_DRIFT_MESSAGE", "Dispatch", "PreparedCall"]

CONFIG_DRIFT_MESSAGE: Final = "prepared LLM call config changed before adapter dispatch"
"""The failure message for options whose call config differs from the prepared one."""


Dispatch: TypeAlias = Callable[[GenerateOptions, "PreparedCall"], ChunkStream]
"""How a prepared call enters the runtime's `llm/stream` chain (the runtime's own dispatch)."""


class PreparedCall:
    """A one-shot dispatch handle pinned to a registration: `.config .retry_policy .context
    .adapter_defaults .stream(options)`."""

    __slots__ = (
        "_adapter_defaults",
        "_config",
        "_context",
        "_dispatch",
        "_dispatched",
        "_info",
        "_route",
    )

    def __init__(
        self,
        dispatch: Dispatch,
        route: Route,
        config: CallConfig,
        context: ModelContext | None,
        adapter_defaults: AdapterDefaults,
        model_info: ResolvedModelInfo,
    ) -> None:
        self._dispatch = dispatch
        self._route = route
        self._config = config
        self._context = context
        self._adapter_defaults = adapter_defaults
        self._info = model_info
        self._dispatched = False

    @property
    def config(self) -> CallConfig:
        """The resolved call config (adapter defaults materialized)."""
        return self._config

    @property
    def retry_policy(self) -> RetryPolicy:
        """The policy of the registration captured at prepare time (same object)."""
        return self._route.retry_policy

    @property
    def context(self) -> ModelContext | None:
        """The model's context window, when the adapter published one."""
        return self._context

    @property
    def adapter_defaults(self) -> AdapterDefaults:
        """Which config fields the adapter (not the caller) supplied."""
        return self._adapter_defaults

    @property
    def model_info(self) -> ResolvedModelInfo:
        """The model metadata resolved at prepare time (capabilities included)."""
        return self._info

    @property
    def route(self) -> Route:
        """The pinned route: the adapter bound to the configuration generation the call was
        prepared against (`LlmAdapter.pinned()`), its provider info and retry policy."""
        return self._route

    def stream(self, options: GenerateOptions) -> ChunkStream:
        """Dispatch once through the `llm/stream` chain to the pinned adapter.

        Raises `INVALID_PREPARED_CALL` synchronously when already dispatched, or when the call
        config of `options` differs from `config` (that refusal does not consume the handle).
        A middleware that re-routes the request gets a terminal `INVALID_PREPARED_CALL` finish.
        """
        if self._dispatched:
            raise LlmError(
                "a prepared LLM call can only be dispatched once", ErrorCode.INVALID_PREPARED_CALL
            )
        if not call_config_equals(options, self._config):
            raise LlmError(CONFIG_DRIFT_MESSAGE, ErrorCode.INVALID_PREPARED_CALL)
        self._dispatched = True
        return self._dispatch(options, self)
