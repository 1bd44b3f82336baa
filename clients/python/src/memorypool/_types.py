"""The shapes the service answers with, as TypedDicts (optional keys in `total=False` classes, so
the standard library of Python 3.8 has all it needs).

They mirror the zod schemas in src/protocol/response-schemas.ts; tests/test_types.py checks their
keys against those schemas' JSON Schema, so they cannot drift apart unnoticed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
    "AddAnswer",
    "BatchAnswer",
    "BatchResult",
    "ChangeEvent",
    "ChangesPage",
    "Deleted",
    "DeletedCount",
    "DeletedUser",
    "Explanation",
    "Health",
    "ListPage",
    "Memory",
    "MemoryHistory",
    "MemoryVersion",
    "Message",
    "Metadata",
    "PoolStats",
    "EntitiesAnswer",
    "ScoredMemory",
    "SearchAnswer",
    "SearchHit",
    "ValidationIssue",
    "WebhookStatus",
    "WebhooksAnswer",
]

Metadata = Dict[str, Union[str, int, float, bool]]


class _Message(TypedDict):
    role: str
    content: str


class Message(_Message, total=False):
    timestamp: Optional[int]


class ValidationIssue(TypedDict):
    loc: List[Union[str, int]]
    msg: str
    type: str


class _Memory(TypedDict):
    id: str
    user_id: str
    text: str
    tags: List[str]
    importance: float
    source: str
    created_at: str
    version: int
    updated_at: str
    metadata: Metadata


class Memory(_Memory, total=False):
    agent_id: str
    run_id: str
    expires_at: str
    session_id: str
    role: str
    occurred_at: str
    request_id: str
    message_index: int
    part: int
    parts: int


class ScoreTerm(TypedDict):
    term: str
    kind: Literal["add", "multiply"]
    value: float


class Explanation(TypedDict):
    score: float
    terms: List[ScoreTerm]


class _ScoredMemory(Memory):
    score: float


class ScoredMemory(_ScoredMemory, total=False):
    duplicates: int
    explanation: Explanation


class SearchHit(TypedDict):
    id: str
    content: str
    score: float
    created_at: str


class SearchAnswer(TypedDict):
    data: List[SearchHit]


class AddAnswer(TypedDict):
    success: Literal[True]
    request_id: str
    user_id: str
    session_id: str


class Health(TypedDict):
    ok: Literal[True]
    service: Literal["memorypool"]
    version: str
    count: int


class Deleted(TypedDict):
    deleted: str


class DeletedUser(TypedDict):
    deleted_user: str
    deleted: int


class PoolStats(TypedDict):
    count: int
    users: int
    embedder: Dict[str, Any]
    cache: Dict[str, Any]
    per_user: List[Dict[str, Any]]


class Entity(TypedDict):
    entity: str
    kind: str
    count: int
    last_seen: Optional[str]


class EntitiesAnswer(TypedDict):
    entities: List[Entity]


class _MemoryVersion(TypedDict):
    version: int
    text: str
    tags: List[str]
    importance: float
    metadata: Metadata
    updated_at: str


class MemoryVersion(_MemoryVersion, total=False):
    agent_id: str
    run_id: str
    expires_at: str


class MemoryHistory(TypedDict):
    id: str
    versions: List[MemoryVersion]


class ListPage(TypedDict):
    memories: List[Memory]
    next_cursor: Optional[str]


class ChangeEvent(TypedDict):
    seq: int
    type: Literal["added", "updated", "deleted", "expired", "user_deleted"]
    at: str
    user_id: str
    memory_id: Optional[str]
    # The memory as this write left it; None for deletions and for a memory deleted since.
    memory: Optional[Memory]


class ChangesPage(TypedDict):
    events: List[ChangeEvent]
    next_cursor: str


class WebhookStatus(TypedDict):
    id: str
    url: str
    events: Optional[List[str]]
    users: Optional[List[str]]
    # Every event it wants up to this seq was delivered; None before its first claim.
    delivered_seq: Optional[int]
    failures: int
    last_error: Optional[str]
    next_try_at: Optional[str]
    failed: bool
    holder: Optional[str]
    lease_expires_at: Optional[str]


class WebhooksAnswer(TypedDict):
    webhooks: List[WebhookStatus]


class DeletedCount(TypedDict):
    deleted: int
    dry_run: bool


class _BatchResult(TypedDict):
    status: int


class BatchResult(_BatchResult, total=False):
    """One operation of a batch: `status` as its own route would give it, with the memory, the id deleted or the error."""

    memory: Memory
    deleted: str
    error: str


class BatchAnswer(TypedDict):
    results: List[BatchResult]
