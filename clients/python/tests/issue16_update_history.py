"""update, history, metadata and time filters against a real server (MEMORYPOOL_TEST_URL): issue 16's
routes. Not picked up by `discover` (its name does not start with test_); run by
test/client/update-history.test.ts as `python3 -m unittest tests.issue16_update_history`."""

from __future__ import annotations

import datetime
import unittest

from memorypool import BadRequestError, MemoryPoolClient, NotFoundError

from ._support import required_env


class UpdateAndHistory(unittest.TestCase):
    def test_update_history_and_filters(self) -> None:
        client = MemoryPoolClient(required_env("MEMORYPOOL_TEST_URL"), "")
        before = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
        dog = client.remember("Caroline adopted a rescue dog named Max", tags=["pets"], metadata={"topic": "pets"}, user_id="caroline")
        client.remember("Caroline works as a counsellor", metadata={"topic": "work"}, user_id="caroline")
        self.assertEqual(dog.get("metadata"), {"topic": "pets"})

        updated = client.update(dog["id"], text="Caroline adopted a rescue beagle named Max", importance=0.9, user_id="caroline")
        self.assertEqual((updated["text"], updated["importance"], updated["tags"], updated.get("version")), ("Caroline adopted a rescue beagle named Max", 0.9, ["pets"], 2))
        self.assertIsInstance(updated.get("updated_at"), str)

        history = client.history(dog["id"], user_id="caroline")
        self.assertEqual(history["id"], dog["id"])
        self.assertEqual((history["versions"][0]["version"], history["versions"][0]["text"]), (1, "Caroline adopted a rescue dog named Max"))

        with self.assertRaises(NotFoundError):
            client.update("no-such-id", text="x", user_id="caroline")
        with self.assertRaises(BadRequestError):
            client.update(dog["id"], user_id="caroline")

        self.assertEqual([hit["id"] for hit in client.recall("Caroline", filter={"topic": "pets"}, user_id="caroline")], [dog["id"]])
        self.assertEqual([memory["text"] for memory in client.list(filter={"topic": "work"}, user_id="caroline")], ["Caroline works as a counsellor"])
        self.assertEqual(len(client.list(since=before, user_id="caroline")), 2)
        self.assertEqual(client.list(until=before, user_id="caroline"), [])


if __name__ == "__main__":
    unittest.main()
