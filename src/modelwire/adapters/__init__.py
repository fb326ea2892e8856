"""Provider adapters: `deepseek` (hand-written OpenAI-compatible SSE), `providers` (multi-provider
profiles) and `replay` (recorded calls for tests). Import each from its own module; none is loaded
by `import modelwire`."""
