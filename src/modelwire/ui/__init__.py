"""`modelwire ui`: a local, read-only web inspector of a session log (layer 8, beside the CLI).

```python
from modelwire.ui import serve

server = await serve("sqlite:///sessions.db")      # 127.0.0.1, a free port
print(server.url)                                  # the sessions list; a session at /session?id=…
await server.close()
```

`create_app(log)` is the bare `aiohttp.web.Application` (for tests or embedding). The page is
plain HTML, CSS and ES-module JavaScript shipped in the package (no CDN, no build step, no
template engine: the HTML is static and the page fills itself from JSON with DOM text nodes, so
model output is never parsed as markup). Live sessions update over server-sent events that tail
the log, on every backend.
"""

from __future__ import annotations

from .app import DEFAULT_POLL_INTERVAL, create_app
from .server import UiServer, serve, server_url

__all__ = ["DEFAULT_POLL_INTERVAL", "UiServer", "create_app", "serve", "server_url"]
