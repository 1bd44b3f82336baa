"""What the tests need from the vitest run that starts them (test/client/python.test.ts)."""

from __future__ import annotations

import os
import unittest


def required_env(name: str) -> str:
    """The variable the runner sets; outside it the suite is skipped, except under CI, where that is a failure."""
    value = os.environ.get(name)
    if value:
        return value
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{name} is not set: run these tests through `npx vitest run test/client/python.test.ts`")
    raise unittest.SkipTest(f"{name} is not set: run through `npx vitest run test/client/python.test.ts`")
