"""The shared behaviour table (test/client/behaviour-cases.json) against the misbehaving socket of
test/client/misbehaving-server.ts, which the vitest runner starts and names in MEMORYPOOL_MISBEHAVING_URL."""

from __future__ import annotations

import json
import re
import time
import unittest
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import memorypool
from memorypool import MemoryPoolClient, MemoryPoolError

from ._support import required_env

CASES = json.loads((Path(__file__).resolve().parents[3] / "test" / "client" / "behaviour-cases.json").read_text())["cases"]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def control(url: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers={"content-type": "application/json"}, method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def client_for(url: str, options: Dict[str, Any]) -> MemoryPoolClient:
    return MemoryPoolClient(
        url,
        options.get("token", ""),
        retries=options.get("retries", 2),
        timeout=options.get("timeoutMs", 2000) / 1000,
        retry_delay=options.get("retryDelayMs", 1) / 1000,
        max_retry_delay=options.get("maxRetryDelayMs", 5) / 1000,
    )


def is_subset(expected: Dict[str, Any], actual: Any) -> bool:
    return isinstance(actual, dict) and all(key in actual and actual[key] == value for key, value in expected.items())


class BehaviourTable(unittest.TestCase):
    url: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.url = required_env("MEMORYPOOL_MISBEHAVING_URL")

    def test_every_case(self) -> None:
        for case in CASES:
            with self.subTest(case["name"]):
                self.run_case(case)

    def test_with_options(self) -> None:
        client = client_for(self.url, {})
        control(self.url, "/__case", {"replies": [{"status": 503, "headers": {"retry-after": "0"}}]})
        with self.assertRaises(memorypool.InternalServerError):
            client.with_options(retries=0).stats()
        self.assertEqual(len(control(self.url, "/__attempts")["attempts"]), 1)
        control(self.url, "/__case", {"replies": [{"status": 200, "body": [], "delayMs": 1000}]})
        with self.assertRaises(memorypool.APITimeoutError):
            client.with_options(timeout=0.1, retries=0).list()
        self.assertEqual(len(control(self.url, "/__attempts")["attempts"]), 1)
        self.assertEqual(client.retries, 2)

    def run_case(self, case: Dict[str, Any]) -> None:
        control(self.url, "/__case", {"replies": case["replies"]})
        client = client_for(self.url, case.get("client", {}))
        expect = case["expect"]
        started = time.monotonic()
        result: Any = None
        error: Any = None
        try:
            result = getattr(client, snake(case["call"]))(**case["args"])
        except MemoryPoolError as caught:
            error = caught
        elapsed_ms = (time.monotonic() - started) * 1000
        attempts: List[Dict[str, Any]] = control(self.url, "/__attempts")["attempts"]
        self.assertEqual(len(attempts), expect["attempts"], "attempts")
        if "error" in expect:
            wanted = expect["error"]
            self.assertIsNotNone(error, f"the call should have failed, got {result!r}")
            self.assertEqual(type(error).__name__, wanted["class"])
            self.assertIsInstance(error, getattr(memorypool, wanted["class"]))
            for field in ("status", "reason", "code", "issues"):
                if field in wanted:
                    self.assertEqual(getattr(error, field), wanted[field], field)
        else:
            self.assertIsNone(error, f"the call failed: {error!r}")
            self.assertEqual(result, expect["result"])
        wanted_request = expect.get("request")
        if wanted_request:
            first = attempts[0]
            self.assertEqual(first["method"], wanted_request["method"])
            self.assertEqual(first["path"], wanted_request["path"])
            if "query" in wanted_request:
                self.assertEqual(first["query"], wanted_request["query"])
            if "body" in wanted_request:
                self.assertTrue(is_subset(wanted_request["body"], first["body"]), f"{first['body']!r} should include {wanted_request['body']!r}")
            for name, value in wanted_request.get("headers", {}).items():
                self.assertEqual(first["headers"].get(name), value, name)
        if expect.get("sameBodyAcrossAttempts"):
            for attempt in attempts:
                self.assertEqual(attempt["body"], attempts[0]["body"])
        if "minElapsedMs" in expect:
            self.assertGreaterEqual(elapsed_ms, expect["minElapsedMs"])


if __name__ == "__main__":
    unittest.main()
