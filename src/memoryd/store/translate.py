"""Contract calls of a store, its core and its parts alike, with every error of the database
driver re-raised as :class:`~memoryd.errors.StoreError` (memoryd's own errors pass), and text
holding NUL refused before the call (one rule for both backends)."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from memoryd.errors import MemorydError, StoreError
from memoryd.store import policy


def _translating(method: Callable[..., Any], errors: tuple[type[BaseException], ...]) -> Any:
    """``method`` with the driver's errors re-raised as StoreError (memoryd's own pass), and
    text with NUL in its arguments refused first."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        policy.refuse_nul((args, kwargs))
        try:
            return method(self, *args, **kwargs)
        except MemorydError:
            raise
        except errors as exc:
            raise StoreError(f"the {self.backend} store failed: {exc}") from exc

    assert not inspect.isgeneratorfunction(method)
    call.__translated__ = True  # type: ignore[attr-defined]
    return call


def translating_by_instance(method: Callable[..., Any]) -> Any:
    """``method`` translating the errors of its instance's database (``self.db``): one class
    serves stores of every backend."""
    by_errors: dict[tuple[type[BaseException], ...], Callable[..., Any]] = {}

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        errors = self.db.driver_errors
        translated = by_errors.get(errors)
        if translated is None:
            translated = by_errors.setdefault(errors, _translating(method, errors))
        return translated(self, *args, **kwargs)

    call.__translated__ = True  # type: ignore[attr-defined]
    return call
