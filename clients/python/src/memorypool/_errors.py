"""The errors the client raises: one base class, a subclass per status, two for calls that got no answer.

Built from the status and the body only, never from matching message text. Same names as the
TypeScript client's (memorypool/client).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Type

from ._types import ValidationIssue


class MemoryPoolError(Exception):
    """`status` is None when no answer came; `reason` is the server's `detail.reason` (a 422's problems, joined)."""

    status: Optional[int]
    reason: str
    issues: List[ValidationIssue]
    code: Optional[str]
    body: Any
    headers: Dict[str, str]

    def __init__(
        self,
        reason: str,
        *,
        status: Optional[int] = None,
        issues: Optional[List[ValidationIssue]] = None,
        code: Optional[str] = None,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(reason if status is None else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.issues = list(issues or [])
        self.code = code
        self.body = body
        self.headers = dict(headers or {})


class BadRequestError(MemoryPoolError): ...
class AuthenticationError(MemoryPoolError): ...
class PermissionDeniedError(MemoryPoolError): ...
class NotFoundError(MemoryPoolError): ...
class ConflictError(MemoryPoolError): ...
class UnprocessableEntityError(MemoryPoolError): ...
class RateLimitError(MemoryPoolError): ...


class InternalServerError(MemoryPoolError):
    """5xx: the service could not do it now (503: not durable, overloaded, storage down)."""


class APIConnectionError(MemoryPoolError):
    """No answer: refused, reset or dropped connection."""


class APITimeoutError(APIConnectionError):
    """No answer within the timeout."""


_BY_STATUS: Dict[int, Type[MemoryPoolError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_from_answer(status: int, body: Any, headers: Optional[Mapping[str, str]] = None) -> MemoryPoolError:
    """The error for an answer: `{"detail": {"reason"}}`, or a 422's `{"detail": [issues]}`."""
    detail = body.get("detail") if isinstance(body, dict) else None
    issues: List[ValidationIssue] = list(detail) if isinstance(detail, list) else []
    if issues:
        reason = "; ".join(".".join(str(part) for part in issue.get("loc", [])) + ": " + str(issue.get("msg")) for issue in issues)
    elif isinstance(detail, dict) and isinstance(detail.get("reason"), str):
        reason = detail["reason"]
    elif isinstance(detail, str):
        reason = detail
    else:
        reason = f"HTTP {status}"
    raw_code = detail.get("code") if isinstance(detail, dict) else None
    error_class = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else MemoryPoolError)
    return error_class(reason, status=status, issues=issues, code=raw_code if isinstance(raw_code, str) else None, body=body, headers=headers)
