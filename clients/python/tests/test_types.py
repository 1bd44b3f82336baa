"""The TypedDicts against the server's answer schemas (src/protocol/response-schemas.ts as JSON
Schema, written by the vitest runner to MEMORYPOOL_RESPONSE_SCHEMAS): same keys, same required ones."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

from memorypool import _types

from ._support import required_env

PAIRS = {
    "memory": _types.Memory,
    "scoredMemory": _types.ScoredMemory,
    "history": _types.MemoryHistory,
    "memoryVersion": _types.MemoryVersion,
    "poolStats": _types.PoolStats,
    "entitiesAnswer": _types.EntitiesAnswer,
    "health": _types.Health,
    "deleted": _types.Deleted,
    "deletedUser": _types.DeletedUser,
    "addAnswer": _types.AddAnswer,
    "searchAnswer": _types.SearchAnswer,
    "listPage": _types.ListPage,
    "deletedCount": _types.DeletedCount,
    "batchAnswer": _types.BatchAnswer,
    "batchResult": _types.BatchResult,
    "changeEvent": _types.ChangeEvent,
    "changesPage": _types.ChangesPage,
}


class TypesMatchTheServer(unittest.TestCase):
    def test_keys(self) -> None:
        schemas = json.loads(Path(required_env("MEMORYPOOL_RESPONSE_SCHEMAS")).read_text())
        for name, typed in PAIRS.items():
            with self.subTest(name):
                schema = schemas[name]
                keys = set(typed.__required_keys__) | set(typed.__optional_keys__)
                self.assertEqual(keys, set(schema["properties"]))
                self.assertEqual(set(typed.__required_keys__), set(schema.get("required", [])))


if __name__ == "__main__":
    unittest.main()
