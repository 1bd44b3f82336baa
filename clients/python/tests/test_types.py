"""The TypedDicts against the server's answer schemas (src/protocol/response-schemas.ts as JSON
Schema, written by the vitest runner to MEMORYPOOL_RESPONSE_SCHEMAS): same keys, same required ones."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

from memorypool import _types

from ._support import required_env

# Schema name -> (TypedDict, keys issue 16 adds that the schema on this branch may not have yet).
PAIRS = {
    "memory": (_types.Memory, {"metadata", "version", "updated_at"}),
    "scoredMemory": (_types.ScoredMemory, {"metadata", "version", "updated_at"}),
    "poolStats": (_types.PoolStats, set()),
    "health": (_types.Health, set()),
    "deleted": (_types.Deleted, set()),
    "deletedUser": (_types.DeletedUser, set()),
    "addAnswer": (_types.AddAnswer, set()),
    "searchAnswer": (_types.SearchAnswer, set()),
}


class TypesMatchTheServer(unittest.TestCase):
    def test_keys(self) -> None:
        schemas = json.loads(Path(required_env("MEMORYPOOL_RESPONSE_SCHEMAS")).read_text())
        for name, (typed, pending) in PAIRS.items():
            with self.subTest(name):
                schema = schemas[name]
                keys = set(typed.__required_keys__) | set(typed.__optional_keys__)
                self.assertEqual(keys - pending, set(schema["properties"]) - pending)
                self.assertEqual(set(typed.__required_keys__), set(schema.get("required", [])))


if __name__ == "__main__":
    unittest.main()
