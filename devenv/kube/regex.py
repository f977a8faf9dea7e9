"""Regular expressions for CRD `pattern`s, with the semantics kube-apiserver uses: Go's regexp, i.e. RE2.

Python's `re` differs where it matters: `$` also matches before a trailing newline (RE2's only at the end
of the text), `\\d`/`\\w` match non-ASCII digits and letters, and it accepts what RE2 refuses
(lookarounds, backreferences). So patterns run on the RE2 library itself (google-re2, which cel-python
already uses for CEL's `matches()`), and a pattern RE2 cannot compile is refused at CRD creation.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors are returned to the client, not written to the log


class PatternError(ValueError):
    """A pattern RE2 refuses, with a message like Go's regexp.Compile."""


@lru_cache(maxsize=1024)
def compile_re2(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"error parsing regexp: {why}") from None
