"""The runtime layer: adapter registry, prepared calls, middleware and the failure boundary."""

from .adapter import LlmAdapter
from .boundary import ChunkStream, failure_finish
from .directory import DirectoryRegistration, Discover
from .events import ADAPTER_CHANGE, AdapterChangeListener
from .generate import GenerateResult
from .invariant import InvariantError, check_registry, checked_stream, install_invariants
from .middleware import CallNext, GenerateMiddleware, GenerateNext, StreamMiddleware
from .prepared import PreparedCall
from .registry import REGISTRATION_DISPOSED, Registration, RegistrationHandle, Route
from .runtime import LlmRuntime
from .scope import Disposer, Scope

__all__ = [
    "ADAPTER_CHANGE",
    "REGISTRATION_DISPOSED",
    "AdapterChangeListener",
    "CallNext",
    "ChunkStream",
    "DirectoryRegistration",
    "Discover",
    "Disposer",
    "GenerateMiddleware",
    "GenerateNext",
    "GenerateResult",
    "InvariantError",
    "LlmAdapter",
    "LlmRuntime",
    "PreparedCall",
    "Registration",
    "RegistrationHandle",
    "Route",
    "Scope",
    "StreamMiddleware",
    "check_registry",
    "checked_stream",
    "failure_finish",
    "install_invariants",
]
