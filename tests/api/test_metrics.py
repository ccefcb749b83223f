"""Prometheus /metrics: requests by route and status, latency, exact vs semantic hits per culture."""

from __future__ import annotations

import re


def _value(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        m = re.fullmatch(re.escape(name) + r"\{(.*)\} (\S+)", line)
        if m:
            found = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(m.group(2))
    return 0.0


def test_metrics_count_requests_latency_and_hits(make_client):
    with make_client() as c:
        c.post("/v1/lookup", json={"concepts": ["full moon", "stormy weather", "quantum physics"], "culture": "en",
                                   "tau": 0.5})
        c.post("/v1/lookup", json={"concepts": ["bamboo"], "culture": "Chinese"})
        c.post("/v1/lookup", json={"concepts": ["bamboo"], "culture": "xx"})
        c.get("/v1/concepts/en/..%2Fetc%2Fpasswd")
        c.post("/v1/augment", json={"concepts": ["storm"], "culture": "en"})
        text = c.get("/metrics").text
    assert _value(text, "culturekb_lookup_hits_total", culture="en", kind="exact") == 2  # full moon, storm
    assert _value(text, "culturekb_lookup_hits_total", culture="en", kind="semantic") == 1
    assert _value(text, "culturekb_lookup_hits_total", culture="en", kind="none") == 1
    assert _value(text, "culturekb_lookup_hits_total", culture="zh", kind="exact") == 1
    assert _value(text, "culturekb_http_requests_total", route="/v1/lookup", status="200") == 2
    assert _value(text, "culturekb_http_requests_total", route="/v1/lookup", status="422") == 1
    # the route template is the label, never the raw path with the user's text
    assert _value(text, "culturekb_http_requests_total", route="/v1/concepts/{culture}/{concept:path}",
                  status="404") == 1
    assert "passwd" not in text
    assert _value(text, "culturekb_http_request_duration_seconds_count", route="/v1/lookup") == 3
    assert _value(text, "culturekb_lookup_concepts_total", endpoint="lookup") == 4
