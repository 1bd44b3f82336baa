"""The Python client against a real memorypool server (started by the vitest runner, named in
MEMORYPOOL_TEST_URL; hash embedder, an empty data directory): every method, its answers and errors."""

from __future__ import annotations

import re
import threading
import unittest

from memorypool import BadRequestError, MemoryPoolClient, NotFoundError, UnprocessableEntityError

from ._support import required_env


class AgainstRealServer(unittest.TestCase):
    def test_every_method(self) -> None:
        client = MemoryPoolClient(required_env("MEMORYPOOL_TEST_URL"), "")
        health = client.health()
        self.assertEqual(health, {"ok": True, "service": "memorypool", "version": health["version"], "count": 0})
        self.assertRegex(health["version"], r"^\d+\.\d+\.\d+")

        dog = client.remember("Caroline adopted a rescue dog named Max", tags=["pets"], importance=0.8, user_id="caroline")
        self.assertEqual((dog["user_id"], dog["text"], dog["tags"], dog["importance"], dog["source"]), ("caroline", "Caroline adopted a rescue dog named Max", ["pets"], 0.8, "cli"))
        job = client.remember("Caroline works as a counsellor at a youth centre", user_id="caroline")

        hits = client.recall("dog named Max", user_id="caroline", limit=5)
        self.assertEqual(hits[0]["id"], dog["id"])
        self.assertIsInstance(hits[0]["score"], float)
        self.assertEqual(len(client.recall("dog", user_id="caroline", tag="pets")), 1)
        self.assertGreater(len(client.recall("dog", user_id="caroline", explain=True, limit=1)[0]["explanation"]["terms"]), 0)

        self.assertEqual([memory["id"] for memory in client.list(user_id="caroline")], [job["id"], dog["id"]])
        self.assertEqual(len(client.list(user_id="caroline", limit=1)), 1)
        self.assertEqual(client.get(dog["id"], user_id="caroline"), dog)

        # Scopes, a where expression and pages (issue 27).
        planner = client.remember("Caroline books the venue", agent_id="planner", run_id="r1", user_id="caroline")
        self.assertEqual((planner["agent_id"], planner["run_id"]), ("planner", "r1"))
        self.assertEqual([m["id"] for m in client.list(agent_id="planner", user_id="caroline")], [planner["id"]])
        self.assertEqual(client.list(agent_id="nobody", user_id="caroline"), [])
        self.assertEqual([h["id"] for h in client.find("venue", where={"$or": [{"agent_id": "planner"}, {"importance": {"$gt": 0.9}}]}, user_id="caroline")], [planner["id"]])
        with self.assertRaises(BadRequestError) as bad_where:
            client.find("venue", where={"$or": [{"importance": "high"}]}, user_id="caroline")
        self.assertEqual(bad_where.exception.reason, "where.$or[0].importance: must be a number")
        self.assertEqual(client.update(planner["id"], agent_id="coordinator", user_id="caroline")["agent_id"], "coordinator")
        # None clears a scope or the expiry on update; a keyword left out leaves it as it is.
        scoped = client.remember("Caroline drafts the agenda", agent_id="scribe", run_id="r2", ttl_seconds=3600, user_id="caroline")
        self.assertIn("expires_at", scoped)
        cleared = client.update(scoped["id"], agent_id=None, expires_at=None, user_id="caroline")
        self.assertNotIn("agent_id", cleared)
        self.assertNotIn("expires_at", cleared)
        self.assertEqual((cleared["run_id"], cleared["version"]), ("r2", 2))
        self.assertEqual(client.forget(scoped["id"], user_id="caroline"), {"deleted": scoped["id"]})
        first = client.list_page(limit=2, user_id="caroline")
        self.assertEqual([m["id"] for m in first["memories"]], [planner["id"], job["id"]])
        self.assertEqual(client.list_page(limit=2, cursor=first["next_cursor"], user_id="caroline"), {"memories": [dog], "next_cursor": None})
        self.assertEqual([m["id"] for m in client.list_all(limit=1, user_id="caroline")], [planner["id"], job["id"], dog["id"]])
        self.assertEqual(client.forget_where({"agent_id": "coordinator"}, dry_run=True, user_id="caroline"), {"deleted": 1, "dry_run": True})
        self.assertEqual(client.forget_where({"agent_id": "coordinator"}, user_id="caroline"), {"deleted": 1, "dry_run": False})

        # Several users at once: merged, each hit carrying its user_id.
        other = client.remember("Caroline's team adopted a rescue cat", user_id="caroline-team")
        across = client.recall("rescue", user_id="caroline", user_ids=["caroline-team"])
        self.assertEqual({hit["user_id"] for hit in across}, {"caroline", "caroline-team"})
        self.assertEqual([m["id"] for m in client.list(user_ids=["caroline-team", "caroline"], limit=1)], [other["id"]])
        self.assertEqual(client.forget(other["id"], user_id="caroline-team"), {"deleted": other["id"]})

        # A batch: each operation answered in order; an invalid one refuses only itself.
        batch = client.batch([{"op": "add", "text": "Caroline paints"}, {"op": "update", "id": dog["id"], "importance": 0.9}, {"op": "add"}], user_id="caroline")
        self.assertEqual([result["status"] for result in batch["results"]], [201, 200, 400])
        self.assertEqual(batch["results"][2]["error"], "operations[2].text: is required")
        dog = batch["results"][1]["memory"]
        self.assertEqual(client.batch([{"op": "delete", "id": batch["results"][0]["memory"]["id"]}], user_id="caroline")["results"][0]["status"], 200)

        self.assertEqual(client.forget(job["id"], user_id="caroline"), {"deleted": job["id"]})
        with self.assertRaises(NotFoundError) as missing:
            client.get(job["id"], user_id="caroline")
        self.assertEqual(missing.exception.status, 404)

        with self.assertRaises(BadRequestError) as empty:
            client.remember("   ")
        self.assertEqual((empty.exception.status, empty.exception.reason), (400, "text: text must not be empty"))

        added = client.add(user_id="conv-1", session_id="s1", messages=[{"role": "Caroline", "content": "I went to a support group yesterday.", "timestamp": 1683554160000}])
        self.assertTrue(added["success"])
        self.assertRegex(added["request_id"], re.compile(r"^[0-9a-f-]{36}$"))
        # The same request id again stores nothing: the platform's idempotency, which the retries rely on.
        client.add(request_id=added["request_id"], user_id="conv-1", session_id="s1", messages=[{"role": "Caroline", "content": "I went to a support group yesterday."}])
        found = client.search(query="What did Caroline attend?", user_id="conv-1", top_k=10)
        self.assertEqual(len(found["data"]), 1)
        self.assertEqual(found["data"][0]["content"], "[2023-05-08 13:56] Caroline: I went to a support group yesterday.")
        self.assertEqual(found["data"][0]["created_at"], "2023-05-08T13:56:00.000Z")

        with self.assertRaises(UnprocessableEntityError) as invalid:
            client.search(query="x", user_id="conv-1", top_k=0)
        self.assertEqual(invalid.exception.issues, [{"loc": ["body", "top_k"], "msg": "Input should be greater than or equal to 1", "type": "greater_than_equal"}])

        stats = client.stats()
        self.assertEqual((stats["count"], stats["users"]), (2, 2))
        self.assertEqual([entry["user_id"] for entry in client.stats(user_id="conv-1")["per_user"]], ["conv-1"])
        self.assertEqual(client.entities(user_id="conv-1"), {"entities": [{"entity": "Caroline", "kind": "person", "count": 1, "last_seen": "2023-05-08T13:56:00.000Z"}]})
        self.assertEqual([memory["role"] for memory in client.list(user_id="conv-1", entity="caroline")], ["Caroline"])
        self.assertEqual(client.recall("support group", user_id="conv-1", entity="Melanie"), [])

        self.assertEqual(client.invoke({"tool": "memorypool", "params": {"action": "get", "id": dog["id"], "user_id": "caroline"}}), dog)
        with self.assertRaises(BadRequestError):
            client.invoke({"tool": "memorypool", "params": {"action": "dance"}})

        self.assertEqual(client.delete_user("conv-1"), {"deleted_user": "conv-1", "deleted": 1})
        health = client.health()
        self.assertEqual(health, {"ok": True, "service": "memorypool", "version": health["version"], "count": 1})
        self.assertRegex(health["version"], r"^\d+\.\d+\.\d+")

    def test_follow_changes(self) -> None:
        client = MemoryPoolClient(required_env("MEMORYPOOL_TEST_URL"), "")
        first = client.remember("the follower's first note", user_id="follower")
        client.update(first["id"], text="the follower's first note, corrected", user_id="follower")
        events = client.follow_changes(user_id="follower", wait=5)
        added, updated = next(events), next(events)
        self.assertEqual((added["type"], added["memory_id"], added["memory"]["text"]), ("added", first["id"], "the follower's first note"))
        self.assertEqual((updated["type"], updated["memory"]["version"]), ("updated", 2))
        self.assertGreater(updated["seq"], added["seq"])
        # The iterator long-polls: a write made while it waits comes out next.
        writer = threading.Timer(0.3, lambda: client.forget(first["id"], user_id="follower"))
        writer.start()
        deleted = next(events)
        writer.join()
        self.assertEqual((deleted["type"], deleted["memory_id"], deleted["memory"]), ("deleted", first["id"], None))
        # Resuming from a seq: the events after it, the deleted memory's text gone from every one.
        page = client.changes(after=added["seq"], user_id="follower")
        self.assertEqual([event["seq"] for event in page["events"]], [updated["seq"], deleted["seq"]])
        self.assertIsNone(page["events"][0]["memory"])
        self.assertGreaterEqual(int(page["next_cursor"]), deleted["seq"])

    def test_environment_defaults(self) -> None:
        import os

        saved = {name: os.environ.get(name) for name in ("MEMORYPOOL_URL", "MEMORYPOOL_TOKEN")}
        try:
            os.environ["MEMORYPOOL_URL"] = required_env("MEMORYPOOL_TEST_URL") + "/"
            os.environ["MEMORYPOOL_TOKEN"] = "from-env"
            client = MemoryPoolClient()
            self.assertEqual((client.url, client.token), (required_env("MEMORYPOOL_TEST_URL"), "from-env"))
            del os.environ["MEMORYPOOL_URL"], os.environ["MEMORYPOOL_TOKEN"]
            self.assertEqual((MemoryPoolClient().url, MemoryPoolClient().token), ("http://127.0.0.1:8751", None))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


if __name__ == "__main__":
    unittest.main()
