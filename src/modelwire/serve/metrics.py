"""`GET /metrics`: the process's gateway counters in the Prometheus text format (0.0.4).

Per route and key name (never a key): requests by endpoint and status, errors by code, tokens by
kind (input, output, cache_read, cache_write), cost in USD, and a latency histogram of whole
requests (seconds, from the request's arrival to its last byte). Counters are this process's;
Prometheus sums the processes behind a load balancer. Label values are escaped as the format
requires.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Final

from ..vocab import TokenUsage

__all__ = ["BUCKETS", "GatewayMetrics"]

BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


class GatewayMetrics:
    """The counters (module docstring); `observe` records one finished request."""

    def __init__(self) -> None:
        self._requests: dict[Labels, int] = defaultdict(int)
        self._errors: dict[Labels, int] = defaultdict(int)
        self._tokens: dict[Labels, int] = defaultdict(int)
        self._cost: dict[Labels, Decimal] = defaultdict(Decimal)
        self._latency: dict[Labels, list[int]] = {}
        self._latency_sum: dict[Labels, float] = defaultdict(float)
        self._latency_count: dict[Labels, int] = defaultdict(int)

    def observe(
        self,
        *,
        endpoint: str,
        route: str,
        key: str,
        status: int,
        code: str | None,
        usage: TokenUsage | None,
        cost: Decimal | None,
        seconds: float,
    ) -> None:
        """Count one request."""
        base: Labels = (("route", route), ("key", key))
        self._requests[(("endpoint", endpoint), *base, ("status", str(status)))] += 1
        if code is not None:
            self._errors[(*base, ("code", code))] += 1
        if usage is not None:
            for kind, count in (
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
                ("cache_read", usage.cache_read_tokens or 0),
                ("cache_write", usage.cache_write_tokens or 0),
            ):
                self._tokens[(*base, ("kind", kind))] += count
        if cost is not None:
            self._cost[base] += cost
        counts = self._latency.setdefault(base, [0] * len(BUCKETS))
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                counts[i] += 1
        self._latency_sum[base] += seconds
        self._latency_count[base] += 1

    def render(self) -> str:
        """The Prometheus text exposition of every counter."""
        out: list[str] = []

        def family(name: str, kind: str, help_text: str) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")

        family(
            "modelwire_gateway_requests_total",
            "counter",
            "Requests by endpoint, route, key and status.",
        )
        out.extend(
            f"modelwire_gateway_requests_total{_labels(k)} {v}" for k, v in self._requests.items()
        )
        family(
            "modelwire_gateway_errors_total", "counter", "Failed requests by route, key and code."
        )
        out.extend(
            f"modelwire_gateway_errors_total{_labels(k)} {v}" for k, v in self._errors.items()
        )
        family("modelwire_gateway_tokens_total", "counter", "Tokens by route, key and kind.")
        out.extend(
            f"modelwire_gateway_tokens_total{_labels(k)} {v}" for k, v in self._tokens.items()
        )
        family("modelwire_gateway_cost_usd_total", "counter", "Cost in USD at list prices.")
        out.extend(
            f"modelwire_gateway_cost_usd_total{_labels(k)} {v:f}" for k, v in self._cost.items()
        )
        family("modelwire_gateway_request_seconds", "histogram", "Whole-request latency.")
        for labels, counts in self._latency.items():
            for bound, count in zip(BUCKETS, counts, strict=True):
                le = (*labels, ("le", repr(bound)))
                out.append(f"modelwire_gateway_request_seconds_bucket{_labels(le)} {count}")
            inf = (*labels, ("le", "+Inf"))
            total = self._latency_count[labels]
            out.append(f"modelwire_gateway_request_seconds_bucket{_labels(inf)} {total}")
            out.append(
                f"modelwire_gateway_request_seconds_sum{_labels(labels)} {self._latency_sum[labels]}"
            )
            out.append(f"modelwire_gateway_request_seconds_count{_labels(labels)} {total}")
        return "\n".join(out) + "\n"
