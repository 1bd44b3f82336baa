"""The memorypool HTTP client, on urllib.request only.

Same methods, options, environment variables, retry rules and errors as the TypeScript client
(`memorypool/client`): retries with exponential backoff and jitter on the answers that stored
nothing (408, 425, 429, 500, 502, 503, 504; 409 for `add` only), honouring `retry-after`;
never on other 4xx. Calls that got no answer (a dropped connection, a timeout) are retried only
where a repeat cannot store twice: everything but `remember` and `invoke`.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union, cast

from ._errors import APIConnectionError, APITimeoutError, MemoryPoolError, error_from_answer
from ._types import (
    AddAnswer,
    BatchAnswer,
    ChangeEvent,
    ChangesPage,
    WebhooksAnswer,
    Deleted,
    DeletedCount,
    DeletedUser,
    Health,
    ListPage,
    Memory,
    MemoryHistory,
    Message,
    Metadata,
    PoolStats,
    EntitiesAnswer,
    ScoredMemory,
    SearchAnswer,
)

DEFAULT_URL = "http://127.0.0.1:8751"
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# `retry-after` is honoured up to a minute, as the OpenAI SDKs do; longer ones fall back to the backoff.
MAX_RETRY_AFTER = 60.0

FilterValue = Union[str, int, float, bool]


class _Unset:
    """A keyword left out (so None can mean "clear it")."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    query: Optional[Mapping[str, Any]] = None
    body: Any = None
    # Whether a call that got no answer may be sent again: true where a repeat cannot store twice.
    idempotent: bool = True
    # The platform's Add retries a 409 (a concurrent Add of the same request id), as the platform does.
    retry_conflict: bool = False
    # Seconds the server may hold the answer on purpose (a long poll), added to the timeout.
    held: float = 0


class MemoryPoolClient:
    """A client for one memorypool server.

    `url` defaults to `MEMORYPOOL_URL`, else http://127.0.0.1:8751; `token` (sent as a bearer
    token) to `MEMORYPOOL_TOKEN`. `timeout` is in seconds per attempt (urllib's socket timeout:
    connecting, and each wait for data); `retries` counts the attempts after the first;
    `retry_delay` is the first backoff, doubling per retry up to `max_retry_delay`, with up to 25%
    jitter off. `with_options(...)` gives a copy with some of these changed, for one call or many.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.url = (url if url is not None else os.environ.get("MEMORYPOOL_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("MEMORYPOOL_TOKEN") or None
        self.timeout = timeout
        self.retries = retries
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.headers = dict(headers or {})

    def with_options(self, **changes: Any) -> "MemoryPoolClient":
        options: Dict[str, Any] = {
            "url": self.url,
            "token": self.token or "",
            "timeout": self.timeout,
            "retries": self.retries,
            "retry_delay": self.retry_delay,
            "max_retry_delay": self.max_retry_delay,
            "headers": self.headers,
        }
        options.update(changes)
        return MemoryPoolClient(**options)

    # The evaluation platform's contract.

    def add(self, *, user_id: str, session_id: str, messages: Sequence[Message], request_id: Optional[str] = None) -> AddAnswer:
        """Stores a conversation; makes a `request_id` when none is given and keeps it across retries."""
        body = {"request_id": request_id or str(uuid.uuid4()), "user_id": user_id, "session_id": session_id, "messages": list(messages)}
        return cast(AddAnswer, self._call(_Call("POST", "/add", body=body, retry_conflict=True)))

    def search(self, *, query: str, user_id: str, top_k: int = 10, options: Optional[Sequence[str]] = None) -> SearchAnswer:
        body = _drop_none({"query": query, "user_id": user_id, "top_k": top_k, "options": None if options is None else list(options)})
        return cast(SearchAnswer, self._call(_Call("POST", "/search", body=body)))

    # The MemoryPool protocol.

    def remember(
        self,
        text: str,
        *,
        tags: Optional[Sequence[str]] = None,
        importance: Optional[float] = None,
        source: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        expires_at: Optional[Union[str, int]] = None,
        ttl_seconds: Optional[float] = None,
        user_id: Optional[str] = None,
    ) -> Memory:
        body = _drop_none({"text": text, "tags": None if tags is None else list(tags), "importance": importance, "source": source, "metadata": metadata, "agent_id": agent_id, "run_id": run_id, "expires_at": expires_at, "ttl_seconds": ttl_seconds, "user_id": user_id})
        return cast(Memory, self._call(_Call("POST", "/mem", body=body, idempotent=False)))

    def recall(
        self,
        query: str,
        *,
        limit: Optional[int] = None,
        tag: Optional[str] = None,
        entity: Optional[str] = None,
        explain: Optional[bool] = None,
        filter: Optional[Mapping[str, FilterValue]] = None,
        since: Optional[Union[str, int]] = None,
        until: Optional[Union[str, int]] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        user_id: Optional[str] = None,
        user_ids: Optional[Sequence[str]] = None,
        rerank: Optional[bool] = None,
    ) -> List[ScoredMemory]:
        """Ranked memories; `filter` is metadata that must match, `since`/`until` ISO 8601 or Unix milliseconds;
        `user_ids` (up to 16, with `user_id`) searches several users at once, merged by score;
        `rerank=False` answers without the server's reranker, if it has one."""
        query_string = _filters(query=query, limit=limit, tag=tag, entity=entity, explain=explain, rerank=rerank, filter=filter, since=since, until=until, agent_id=agent_id, run_id=run_id, user_id=_users(user_id, user_ids))
        return cast(List[ScoredMemory], self._call(_Call("GET", "/mem/search", query=query_string)))

    def list(
        self,
        *,
        limit: Optional[int] = None,
        tag: Optional[str] = None,
        entity: Optional[str] = None,
        filter: Optional[Mapping[str, FilterValue]] = None,
        since: Optional[Union[str, int]] = None,
        until: Optional[Union[str, int]] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        user_id: Optional[str] = None,
        user_ids: Optional[Sequence[str]] = None,
    ) -> List[Memory]:
        """Newest first; `user_ids` (up to 16, with `user_id`) lists several users at once, merged newest first."""
        query_string = _filters(limit=limit, tag=tag, entity=entity, filter=filter, since=since, until=until, agent_id=agent_id, run_id=run_id, user_id=_users(user_id, user_ids))
        return cast(List[Memory], self._call(_Call("GET", "/mem/list", query=query_string)))

    def find(self, query: str, *, where: Optional[Mapping[str, Any]] = None, **fields: Any) -> List[ScoredMemory]:
        """recall with a JSON body (POST /mem/search): recall's keywords plus `where`, a filter expression."""
        body = _drop_none({"query": query, "where": None if where is None else dict(where), **fields})
        return cast(List[ScoredMemory], self._call(_Call("POST", "/mem/search", body=body)))

    def list_page(self, *, where: Optional[Mapping[str, Any]] = None, cursor: Optional[str] = None, **fields: Any) -> ListPage:
        """A page of the list (POST /mem/list): list's keywords plus `where` and the `cursor` of the page before."""
        body = _drop_none({"where": None if where is None else dict(where), "cursor": cursor, **fields})
        return cast(ListPage, self._call(_Call("POST", "/mem/list", body=body)))

    def forget_where(self, where: Mapping[str, Any], *, dry_run: Optional[bool] = None, **fields: Any) -> DeletedCount:
        """Deletes every memory matching `where` and the other filters (POST /mem/delete); with dry_run=True only counts them."""
        body = _drop_none({"where": dict(where), "dry_run": dry_run, **fields})
        return cast(DeletedCount, self._call(_Call("POST", "/mem/delete", body=body)))

    def batch(self, operations: Sequence[Mapping[str, Any]], *, user_id: Optional[str] = None) -> BatchAnswer:
        """Up to 1,000 adds, updates and deletes of one user (POST /mem/batch), applied in order and written together;
        each answered in `results` with its own status. Not retried without an answer: its adds would store twice."""
        body = _drop_none({"operations": [dict(operation) for operation in operations], "user_id": user_id})
        return cast(BatchAnswer, self._call(_Call("POST", "/mem/batch", body=body, idempotent=False)))

    def list_all(self, *, limit: int = 1000, **fields: Any) -> Iterator[Memory]:
        """Every memory that matches, newest first, fetched a page (of `limit`) at a time as the loop reads on."""
        cursor: Optional[str] = None
        while True:
            page = self.list_page(limit=limit, cursor=cursor, **fields)
            yield from page["memories"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def get(self, id: str, *, user_id: Optional[str] = None) -> Memory:
        return cast(Memory, self._call(_Call("GET", _memory_path(id), query={"user_id": user_id})))

    def update(
        self,
        id: str,
        *,
        text: Optional[str] = None,
        tags: Optional[Sequence[str]] = None,
        importance: Optional[float] = None,
        metadata: Optional[Metadata] = None,
        agent_id: Union[str, None, _Unset] = UNSET,
        run_id: Union[str, None, _Unset] = UNSET,
        expires_at: Union[str, int, None, _Unset] = UNSET,
        ttl_seconds: Optional[float] = None,
        user_id: Optional[str] = None,
    ) -> Memory:
        """Changes any of the fields (at least one); a repeat sets the same values. `agent_id=None`,
        `run_id=None` and `expires_at=None` clear the scope or the expiry (left out: unchanged)."""
        body = _drop_none({"text": text, "tags": None if tags is None else list(tags), "importance": importance, "metadata": metadata, "ttl_seconds": ttl_seconds})
        # None is a value here (null clears it); only what was not given stays out of the body.
        body.update({key: value for key, value in (("agent_id", agent_id), ("run_id", run_id), ("expires_at", expires_at)) if not isinstance(value, _Unset)})
        return cast(Memory, self._call(_Call("PATCH", _memory_path(id), query={"user_id": user_id}, body=body)))

    def history(self, id: str, *, user_id: Optional[str] = None) -> MemoryHistory:
        """Every version of the memory, oldest first, the current one last."""
        return cast(MemoryHistory, self._call(_Call("GET", _memory_path(id) + "/history", query={"user_id": user_id})))

    def forget(self, id: str, *, user_id: Optional[str] = None) -> Deleted:
        return cast(Deleted, self._call(_Call("DELETE", _memory_path(id), query={"user_id": user_id})))

    def stats(self, *, user_id: Optional[str] = None) -> PoolStats:
        return cast(PoolStats, self._call(_Call("GET", "/mem/stats", query={"user_id": user_id})))

    def entities(self, *, user_id: Optional[str] = None, limit: Optional[int] = None) -> EntitiesAnswer:
        """Who and what the user's memories mention, the most mentioned first; pass one as `entity` to recall or list."""
        return cast(EntitiesAnswer, self._call(_Call("GET", "/mem/entities", query={"user_id": user_id, "limit": None if limit is None else str(limit)})))

    def changes(self, *, after: Union[str, int] = 0, limit: Optional[int] = None, wait: Optional[int] = None, user_id: Optional[str] = None) -> ChangesPage:
        """A page of the change feed: the events after the cursor `after`, and `next_cursor` to pass next; `wait` (seconds, at most 60) long-polls."""
        query = {"after": str(after), "limit": limit, "wait": wait, "user_id": user_id}
        return cast(ChangesPage, self._call(_Call("GET", "/mem/changes", query=query, held=float(wait or 0))))

    def follow_changes(self, *, after: Union[str, int] = 0, wait: int = 30, limit: Optional[int] = None, user_id: Optional[str] = None) -> Iterator[ChangeEvent]:
        """Every change event from the cursor on, long-polling for as long as the loop reads: resume a follower from the last `seq` it handled."""
        cursor = str(after)
        while True:
            page = self.changes(after=cursor, limit=limit, wait=wait, user_id=user_id)
            yield from page["events"]
            cursor = page["next_cursor"]

    def webhooks(self) -> WebhooksAnswer:
        """Each configured webhook's delivery state (an unscoped token only)."""
        return cast(WebhooksAnswer, self._call(_Call("GET", "/mem/webhooks")))

    def delete_user(self, user_id: str) -> DeletedUser:
        """Everything stored for the user, for good."""
        return cast(DeletedUser, self._call(_Call("DELETE", "/users/" + urllib.parse.quote(user_id, safe=""))))

    def invoke(self, payload: Mapping[str, Any]) -> Any:
        """A BIT tool call (`{tool_id, tool, invoked_by, params}`), routed on `params.action`."""
        return self._call(_Call("POST", "/invoke", body=dict(payload), idempotent=False))

    def health(self) -> Health:
        return cast(Health, self._call(_Call("GET", "/health")))

    # Transport.

    def _call(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                return self._attempt(call)
            except MemoryPoolError as error:
                if attempt >= self.retries or not _retryable(call, error):
                    raise
                time.sleep(self._retry_delay(attempt, error.headers))
                attempt += 1

    def _retry_delay(self, attempt: int, headers: Mapping[str, str]) -> float:
        asked = retry_after_seconds(headers)
        if asked is not None and asked <= MAX_RETRY_AFTER:
            return asked
        backoff = min(self.retry_delay * 2**attempt, self.max_retry_delay)
        return backoff * (1 - random.random() * 0.25)

    def _attempt(self, call: _Call) -> Any:
        headers = {"accept": "application/json", **self.headers}
        if self.token:
            headers["authorization"] = "Bearer " + self.token
        data = None
        if call.body is not None:
            headers["content-type"] = "application/json"
            data = json.dumps(call.body).encode("utf-8")
        request = urllib.request.Request(self.url + call.path + _query_string(call.query), data=data, headers=headers, method=call.method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout + call.held) as response:
                return _parse_json(response.read())
        except urllib.error.HTTPError as answer:
            with answer:
                text = answer.read()
            parsed = _parse_json(text)
            raise error_from_answer(answer.code, parsed if parsed is not None else text.decode("utf-8", "replace"), _lower_keys(answer.headers)) from None
        except (socket.timeout, TimeoutError) as cause:
            raise APITimeoutError(f"No answer within {self.timeout} s") from cause
        except urllib.error.URLError as cause:
            if isinstance(cause.reason, (socket.timeout, TimeoutError)):
                raise APITimeoutError(f"No answer within {self.timeout} s") from cause
            raise APIConnectionError(f"Connection failed: {cause.reason}") from cause
        except (ConnectionError, http.client.HTTPException, OSError) as cause:
            raise APIConnectionError(f"Connection failed: {cause!r}") from cause


def _retryable(call: _Call, error: MemoryPoolError) -> bool:
    if error.status is None:
        return call.idempotent
    return error.status in RETRYABLE_STATUSES or (error.status == 409 and call.retry_conflict)


def retry_after_seconds(headers: Mapping[str, str]) -> Optional[float]:
    """`retry-after-ms`, else `retry-after` in seconds or as an HTTP date; None when absent or unreadable."""
    try:
        ms = float(headers.get("retry-after-ms", ""))
        if ms >= 0:
            return ms / 1000
    except ValueError:
        pass
    value = headers.get("retry-after", "").strip()
    if value == "":
        return None
    try:
        seconds = float(value)
        return seconds if seconds >= 0 else None
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _filters(*, filter: Optional[Mapping[str, FilterValue]] = None, **fields: Any) -> Dict[str, Any]:
    """The query string of /mem/search and /mem/list, as the TypeScript client sends it (`filter` as `meta.<key>`, several users as `user_id` repeated)."""
    query: Dict[str, Any] = {key: value if isinstance(value, list) else _text(value) for key, value in fields.items() if value is not None}
    for key, value in (filter or {}).items():
        query["meta." + key] = _text(value)
    return query


def _users(user_id: Optional[str], user_ids: Optional[Sequence[str]]) -> Union[str, List[str], None]:
    """The users a read names: one as it is, several as a list (sent as `user_id` repeated)."""
    users = ([] if user_id is None else [user_id]) + list(user_ids or [])
    return None if not users else users[0] if len(users) == 1 else users


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _memory_path(id: str) -> str:
    return "/mem/" + urllib.parse.quote(id, safe="")


def _query_string(query: Optional[Mapping[str, Any]]) -> str:
    present = {key: value for key, value in (query or {}).items() if value is not None}
    return "?" + urllib.parse.urlencode(present, doseq=True, quote_via=urllib.parse.quote) if present else ""


def _drop_none(fields: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def _parse_json(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _lower_keys(headers: Any) -> Dict[str, str]:
    return {key.lower(): value for key, value in headers.items()} if headers is not None else {}
