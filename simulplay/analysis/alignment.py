"""Unambiguous word matches under a unit-cost edit alignment (Truong & Le (2026), Appendix E.2).

Intended units ``a`` and recognized units ``b`` are aligned with unit costs
(substitution, insertion and deletion cost 1; an exact match costs 0). Every optimal
alignment is a shortest path through the edit grid; an edge lies on some optimal path
exactly when ``D[from] + cost + B[to] = OPT``, with ``D`` the forward and ``B`` the
backward dynamic programme. Every path crosses from row ``i`` to row ``i + 1`` by one
edge (a deletion or a diagonal), so intended unit ``i`` is **accepted** only when the
only optimal edge leaving row ``i`` is a diagonal *match* with one recognized unit ``j``:
then every optimal alignment assigns it the same exact recognized match and none leaves
it unmatched. Timestamps never enter, so they never resolve a repeated-word ambiguity.

Rows are computed with NumPy (the in-row recurrence is a running minimum), so time is
O(n·m) with vector operations; the backward table is kept (int16 when n + m < 32,000,
else int32), i.e. 2–4 bytes per cell.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ACCEPTED, AMBIGUOUS, MISMATCH = "accepted", "ambiguous", "mismatch"


def _codes(a: Sequence[str], b: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    vocab: dict[str, int] = {}
    ca = np.array([vocab.setdefault(x, len(vocab)) for x in a], np.int64)
    cb = np.array([vocab.setdefault(x, len(vocab)) for x in b], np.int64)
    return ca, cb


def _backward(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """``B[i, j]``: minimum cost of aligning ``a[i:]`` with ``b[j:]``."""
    n, m = len(ca), len(cb)
    dtype = np.int16 if n + m < 32_000 else np.int32
    B = np.empty((n + 1, m + 1), dtype)
    k = np.arange(m + 1)
    B[n] = m - k
    for i in range(n - 1, -1, -1):
        below = B[i + 1].astype(np.int64)
        t = below + 1  # delete a[i]
        t[:m] = np.minimum(t[:m], below[1:] + (cb != ca[i]))  # match or substitute
        # B[i, j] = min_{k ≥ j} t[k] + (k − j): insertions of b[j:k] first
        B[i] = np.minimum.accumulate((t + k)[::-1])[::-1] - k
    return B


def unambiguous_matches(a: Sequence[str], b: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """For each intended unit, the recognized index every optimal alignment matches it to
    (or −1) and its status: ``accepted``, ``ambiguous`` (some optimal alignment matches it,
    but not every one to the same unit) or ``mismatch`` (no optimal alignment matches it)."""
    ca, cb = _codes(a, b)
    n, m = len(ca), len(cb)
    match = np.full(n, -1, np.int64)
    status = [MISMATCH] * n
    if n == 0:
        return match, status
    B = _backward(ca, cb)
    opt = int(B[0, 0])
    k = np.arange(m + 1)
    D = k.astype(np.int64)  # forward row i: cost of aligning a[:i] with b[:j]
    for i in range(n):
        after = B[i + 1].astype(np.int64)
        cost = (cb != ca[i]).astype(np.int64)
        diag = np.flatnonzero(D[:m] + cost + after[1:] == opt)
        vertical = bool((D + 1 + after == opt).any())
        hits = diag[cost[diag] == 0]
        if len(diag) == 1 and not vertical and len(hits) == 1:
            match[i], status[i] = int(hits[0]), ACCEPTED
        elif len(hits):
            status[i] = AMBIGUOUS
        # next forward row: D'[j] = min_{k ≤ j} t[k] + (j − k)
        t = D + 1
        t[1:] = np.minimum(t[1:], D[:m] + cost)
        D = np.minimum.accumulate(t - k) + k
    return match, status
