"""memorypool: the Python client of the memorypool long-term memory service (standard library only)."""

from ._client import DEFAULT_URL, MemoryPoolClient
from ._errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    MemoryPoolError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from . import _types
from ._types import *  # noqa: F401,F403 - the answer shapes, listed in _types.__all__

__all__ = [
    "DEFAULT_URL",
    "MemoryPoolClient",
    "MemoryPoolError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "APIConnectionError",
    "APITimeoutError",
] + _types.__all__
