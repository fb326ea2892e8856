"""The smallest modelwire program: a scripted in-process adapter, one runtime, one call.

Run it with `python examples/minimal.py`. No key and no network: the adapter below streams its
answer chunk by chunk, exactly like a provider adapter would, and `LlmRuntime.generate` assembles
the chunks into one immutable assistant `Message`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import modelwire as mw
from modelwire.runtime.adapter import LlmAdapter


class ScriptedAdapter(LlmAdapter):
    """Answers every request by echoing the last user message, one word per text delta."""

    async def stream(self, options: mw.GenerateOptions) -> AsyncIterator[mw.StreamChunk]:
        last = options.messages[-1]
        asked = " ".join(b.text for b in last.content if isinstance(b, mw.TextBlock))
        words = f"You asked: {asked!r}. Hello from modelwire!".split(" ")
        yield mw.BlockStart(0, "text")
        for n, word in enumerate(words):
            yield mw.TextDelta(0, word if n == 0 else f" {word}")
        yield mw.BlockEnd(0, mw.TextBlock(" ".join(words)))
        yield mw.UsageChunk(
            mw.TokenUsage(input_tokens=len(asked.split()), output_tokens=len(words))
        )
        yield mw.Finish(mw.Stop())


async def main() -> None:
    rt = mw.LlmRuntime()
    rt.register_adapter(["scripted"], ScriptedAdapter())
    result = await rt.generate(
        mw.GenerateOptions(
            provider="scripted",
            model="echo-1",
            messages=(mw.user_message("What is modelwire?"),),
        )
    )
    print(result.message.content[0])  # TextBlock(text="You asked: 'What is modelwire?'. ...")
    print(result.usage)  # TokenUsage(input_tokens=3, output_tokens=8, ...)
    print(result.finish.kind)  # stop


if __name__ == "__main__":
    asyncio.run(main())
