"""What every HTTP adapter shares: sessions, SSE framing, attribution, credentials, status mapping."""
