"""Exact top-k BM25 over one CSR segment that skips the documents that cannot enter the top k
(MaxScore), with the scores ``kernels.bm25._accumulate`` gives, bit for bit.

Each query occurrence (term id, idf) has an upper bound of what it can add to a document's
score in the segment: ``w / (1 + base / max_tf + per_len * min(dl / tf))`` over the term's
postings (``w = idf (k1 + 1)``; ``tf / (tf + base + per_len dl)`` is largest at the largest
tf and the smallest dl / tf), from two per-term figures of the segment worked out once
(``bounds``, 0 until a query needs them; a removed document's postings only loosen them; a
small segment keeps none: they are worked out per query from its few postings).
The occurrences are scanned from the largest bound down, adding into partial sums (lower
bounds of the final scores: every contribution is positive), until the bounds of the ones
left add up to less than the k-th best partial sum, theta (counting the exact scores already
in the best list, from the segments searched before): a document none of the scanned terms
holds cannot reach the top k. The touched documents whose partial sum plus that rest reaches
theta stay candidates; the terms left add to them term by term (each term's postings read
for the candidates among them, or each candidate sought in them when they are few), and a
candidate that can no longer reach theta is dropped. Each survivor is then scored as
``_accumulate`` scores it: the contributions summed in the query's order, the same
expression.

Comparisons keep a relative margin (``MARGIN``, far above the rounding of sums of a few
hundred terms in another order): a document is left out only when its bound is below theta
by more than the margin, so its exact score is strictly below the k-th best and neither its
score nor a tie with its label could have placed it.

The buffers are the caller's, one slot per document (``partial`` float64 and ``seen`` uint8,
zero on entry and left zero; ``touched`` and ``cand`` int64).
"""

from __future__ import annotations

import numpy as np

from kernels.bm25 import _insert
from kernels.flags import kernel

# (alive, owner, code, kind, wanted, private, keys) as ``LiveMemories.visibility`` gives them:
# bool, int32, int, int8, int8, int32, int32.
Visibility = tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

MARGIN = 1e-9
# ``seen`` of a document: touched, still a candidate after the scan, rejected by the filter.
TOUCHED, CANDIDATE, REJECTED = 1, 2, 3


@kernel
def _push(heap: np.ndarray, size: int, k: int, value: float) -> int:
    """``value`` into the min-heap of the k largest values seen (``size`` held)."""
    if size < k:
        i = size
        heap[i] = value
        while i > 0 and heap[(i - 1) // 2] > heap[i]:
            parent = (i - 1) // 2
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        return size + 1
    if value <= heap[0]:
        return size
    heap[0] = value
    i = 0
    while True:
        low, left, right = i, 2 * i + 1, 2 * i + 2
        if left < k and heap[left] < heap[low]:
            low = left
        if right < k and heap[right] < heap[low]:
            low = right
        if low == i:
            return size
        heap[i], heap[low] = heap[low], heap[i]
        i = low


@kernel
def _theta(best_score: np.ndarray, held: int, partial: np.ndarray, seen: np.ndarray,
           docs: np.ndarray, n_docs: int, heap: np.ndarray,
           visibility: Visibility | None) -> float:
    """The k-th largest (k = ``len(heap)``) of the ``held`` exact scores and the partial
    sums of ``docs[:n_docs]``, but those rejected when a filter (``visibility``) is on; -inf
    when there are fewer than k. (None: compiled without the test, as ``_scan``.)"""
    k = heap.shape[0]
    size = 0
    for i in range(held):
        size = _push(heap, size, k, best_score[i])
    for i in range(n_docs):
        d = docs[i]
        if visibility is None or seen[d] != REJECTED:
            size = _push(heap, size, k, partial[d])
    return heap[0] if size == k else -np.inf


@kernel
def _among(value: int, values: np.ndarray) -> bool:
    """Whether ``value`` is one of ``values`` (a viewer's keys, a few types)."""
    for i in range(values.shape[0]):
        if values[i] == value:
            return True
    return False


@kernel
def _seek(post_doc: np.ndarray, lo: int, hi: int, d: int) -> int:
    """The first position in [lo, hi) of the ascending ``post_doc`` holding >= d (hi if
    none): probes at growing steps from lo, then bisects."""
    step, probe = 1, lo
    while probe < hi and post_doc[probe] < d:
        lo = probe + 1
        probe = lo + step
        step *= 2
    probe = min(probe, hi)
    while lo < probe:
        mid = (lo + probe) // 2
        if post_doc[mid] < d:
            lo = mid + 1
        else:
            probe = mid
    return lo


@kernel
def _plan(term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
          bounds: np.ndarray, doc_len: np.ndarray, terms: np.ndarray, idf: np.ndarray,
          k1: float, base: float, per_len: float,
          upper: np.ndarray, order: np.ndarray, rest: np.ndarray) -> int:
    """Each occurrence's bound in ``upper`` (0 without postings here), the ones with postings
    in ``order`` by bound descending (ties: query order), ``rest[j]``: the sum of the bounds
    of ``order[j:]``, with the margin. ``bounds[t]`` (max tf, min dl / tf) filled where 0
    (not worked out); ``bounds`` of no row: worked out for this query only. Returns how many
    are listed; -1 when a known term's idf is not positive (not exact)."""
    for q in range(terms.shape[0]):
        if terms[q] >= 0 and not 0.0 < idf[q] < np.inf:
            return -1
    n_terms = term_ptr.shape[0] - 1
    m = 0
    for q in range(terms.shape[0]):
        t = terms[q]
        upper[q] = 0.0
        if t < 0 or t >= n_terms or term_ptr[t] == term_ptr[t + 1]:
            continue
        cached = bounds.shape[0] > 0
        if cached and bounds[t, 0] > 0.0:
            max_tf, min_ratio = bounds[t, 0], bounds[t, 1]
        else:  # not worked out yet (a term with postings has a tf >= 1)
            max_tf, min_ratio = 0.0, np.inf
            for p in range(term_ptr[t], term_ptr[t + 1]):
                tf = np.float64(post_tf[p])
                max_tf = max(max_tf, tf)
                min_ratio = min(min_ratio, doc_len[post_doc[p]] / tf)
            if cached:  # the ratio first: a reader seeing max tf and a ratio of 0 (unset)
                bounds[t, 1] = min_ratio  # gets a larger bound, still a bound
                bounds[t, 0] = max_tf
        w = idf[q] * (k1 + 1.0)
        upper[q] = w / (1.0 + base / max_tf + per_len * min_ratio) * (1.0 + MARGIN)
        order[m] = q
        m += 1
    # insertion sort by bound descending, stable: a query has a few dozen terms at most
    for i in range(1, m):
        q = order[i]
        j = i
        while j > 0 and upper[order[j - 1]] < upper[q]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = q
    rest[m] = 0.0
    for j in range(m - 1, -1, -1):
        rest[j] = (rest[j + 1] + upper[order[j]]) * (1.0 + MARGIN)
    return m


@kernel
def _scan(term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
          doc_len: np.ndarray, alive: np.ndarray, terms: np.ndarray, idf: np.ndarray,
          k1: float, base: float, per_len: float, order: np.ndarray, rest: np.ndarray,
          m: int, partial: np.ndarray, seen: np.ndarray, touched: np.ndarray,
          best_score: np.ndarray, held: int, heap: np.ndarray, doc_label: np.ndarray,
          visibility: Visibility | None) -> tuple[int, int, float]:
    """Scans ``order`` into the partial sums until the rest's bound is below theta by the
    margin, checked before each term (only once the rest is below the largest partial sum
    so far: theta is no larger). ``visibility``: a document its columns do not offer
    (``LiveMemories.filter`` of its label) is marked rejected once its first term is scanned
    (None: a type of its own, for which Numba compiles the scan without the test). Returns
    (next j, touched count, theta where it stopped or -inf)."""
    largest = best_score[0] if held > 0 else 0.0
    n_touched = 0
    for j in range(m):
        if largest > 0.0 and rest[j] < largest * (1.0 - MARGIN):
            theta = _theta(best_score, held, partial, seen, touched, n_touched, heap,
                           visibility)
            if theta > 0.0 and rest[j] < theta * (1.0 - MARGIN):
                return j, n_touched, theta
        q = order[j]
        t = terms[q]
        w = idf[q] * (k1 + 1.0)
        before = n_touched
        for p in range(term_ptr[t], term_ptr[t + 1]):
            d = post_doc[p]
            if not alive[d]:
                continue
            tf = post_tf[p]
            partial[d] += w * tf / (tf + (base + per_len * doc_len[d]))
            largest = max(largest, partial[d])  # rejected ones too: still no less than theta
            if not seen[d]:
                seen[d] = TOUCHED
                touched[n_touched] = d
                n_touched += 1
        if visibility is not None:  # ``kernels.graph_walk._visible``, written out: 10x faster
            alive_m, owner, code, kind, wanted, private, keys = visibility
            n_ids = alive_m.shape[0]
            for i in range(before, n_touched):
                d = touched[i]
                label = doc_label[d]
                idx = label if 0 < label < n_ids else 0
                whose = private[idx]
                if not alive_m[idx] or (owner[idx] != 0 and owner[idx] != code) or (
                        whose != 0 and not _among(whose, keys)) or (
                        wanted.shape[0] > 0 and not _among(kind[idx], wanted)):
                    seen[d] = REJECTED
    return m, n_touched, -np.inf


@kernel
def _exact(term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
           doc_len: np.ndarray, terms: np.ndarray, idf: np.ndarray, k1: float, base: float,
           per_len: float, d: int) -> float:
    """Document ``d``'s score as ``kernels.bm25._accumulate`` sums it: term by term in query
    order, the same expression."""
    n_terms = term_ptr.shape[0] - 1
    score = 0.0
    for q in range(terms.shape[0]):
        t = terms[q]
        if t < 0 or t >= n_terms:
            continue
        hi = term_ptr[t + 1]
        p = _seek(post_doc, term_ptr[t], hi, d)
        if p < hi and post_doc[p] == d:
            w = idf[q] * (k1 + 1.0)
            tf = post_tf[p]
            score += w * tf / (tf + (base + per_len * doc_len[d]))
    return score


SEEK_BELOW = 48  # postings per candidate under which each candidate is sought, not scanned for


@kernel
def _finish(term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
            doc_len: np.ndarray, terms: np.ndarray, idf: np.ndarray, k1: float, base: float,
            per_len: float, order: np.ndarray, rest: np.ndarray, m: int, j: int,
            partial: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
            best_score: np.ndarray, held: int, heap: np.ndarray, theta: float,
            cand: np.ndarray, visibility: Visibility | None) -> int:
    """The candidates ``_scan`` left (not rejected, partial sum and rest reaching theta):
    their partial sums completed with ``order[j:]``, term by term (the term's postings read
    for the candidates among them, or each candidate sought in them when they are few), those
    that can no longer reach theta dropped. ``theta``: where the scan stopped (-inf: worked
    out here, ``_theta`` of ``visibility``). The survivors go to ``cand``: how many."""
    if theta == -np.inf:
        theta = _theta(best_score, held, partial, seen, touched, n_touched, heap, visibility)
    n = 0
    for i in range(n_touched):
        d = touched[i]
        if seen[d] != REJECTED and not (
                theta > 0.0 and partial[d] + rest[j] < theta * (1.0 - MARGIN)):
            cand[n] = d
            seen[d] = CANDIDATE
            n += 1
    for i in range(j, m):
        if n == 0:
            break
        q = order[i]
        t = terms[q]
        w = idf[q] * (k1 + 1.0)
        lo, hi = term_ptr[t], term_ptr[t + 1]
        if n * SEEK_BELOW < hi - lo:
            for c in range(n):
                d = cand[c]
                p = _seek(post_doc, lo, hi, d)
                if p < hi and post_doc[p] == d:
                    tf = post_tf[p]
                    partial[d] += w * tf / (tf + (base + per_len * doc_len[d]))
        else:
            for p in range(lo, hi):
                d = post_doc[p]
                if seen[d] == CANDIDATE:
                    tf = post_tf[p]
                    partial[d] += w * tf / (tf + (base + per_len * doc_len[d]))
        if i + 1 < m and n * SEEK_BELOW >= term_ptr[terms[order[i + 1]] + 1] - term_ptr[
                terms[order[i + 1]]]:
            continue  # the next term's postings are read whole: pruning now saves nothing
        theta = max(theta, _theta(best_score, held, partial, seen, cand, n, heap, None))
        if theta > 0.0:
            kept = 0
            for c in range(n):
                d = cand[c]
                if partial[d] + rest[i + 1] >= theta * (1.0 - MARGIN):
                    cand[kept] = d
                    kept += 1
                else:
                    seen[d] = TOUCHED
            n = kept
    return n


@kernel
def _search(term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
            bounds: np.ndarray, doc_len: np.ndarray, alive: np.ndarray, doc_label: np.ndarray,
            terms: np.ndarray, idf: np.ndarray, k1: float, base: float, per_len: float,
            upper: np.ndarray, order: np.ndarray, rest: np.ndarray, partial: np.ndarray,
            seen: np.ndarray, touched: np.ndarray, cand: np.ndarray, best_label: np.ndarray,
            best_score: np.ndarray, held: int, heap: np.ndarray,
            visibility: Visibility | None) -> int:
    """One segment's documents (offered by the ``visibility`` columns, when given) into
    the best list (``best_label``, ``best_score``, ``held`` entries, at most k =
    ``len(heap)``): plan, scan, finish, then the survivors scored exactly. The buffers left
    zero. Returns ``held``; -1 (nothing done) when not exact."""
    m = _plan(term_ptr, post_doc, post_tf, bounds, doc_len, terms, idf, k1, base, per_len,
              upper, order, rest)
    if m <= 0:
        return held if m == 0 else -1
    j, n_touched, theta = _scan(term_ptr, post_doc, post_tf, doc_len, alive, terms, idf, k1,
                                base, per_len, order, rest, m, partial, seen, touched,
                                best_score, held, heap, doc_label, visibility)
    n = _finish(term_ptr, post_doc, post_tf, doc_len, terms, idf, k1, base, per_len, order,
                rest, m, j, partial, seen, touched, n_touched, best_score, held, heap, theta,
                cand, visibility)
    k = heap.shape[0]
    for c in range(n):
        d = cand[c]
        held = _insert(best_label, best_score, held, k, doc_label[d],
                       _exact(term_ptr, post_doc, post_tf, doc_len, terms, idf, k1, base,
                              per_len, d))
    for i in range(n_touched):
        d = touched[i]
        partial[d] = 0.0
        seen[d] = 0
    return held


def maxscore_search(
    segment: tuple[np.ndarray, np.ndarray, np.ndarray], bounds: np.ndarray,
    docs: tuple[np.ndarray, np.ndarray, np.ndarray], terms: np.ndarray, idf: np.ndarray,
    norm: tuple[float, float, float], plan: tuple[np.ndarray, np.ndarray, np.ndarray],
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    best: tuple[np.ndarray, np.ndarray, np.ndarray], held: int,
    visibility: Visibility | None = None,
) -> int:
    """``_search`` over one segment: ``bounds`` its (terms, 2) float64 figures (0 where not
    worked out; (0, 2): none kept); ``docs`` (doc_len, alive, doc_label) by document id;
    ``norm`` (k1, base, per_len) as ``kernels.bm25._accumulate`` computes them; ``plan``
    (upper, order, rest) of ``len(terms)``, ``len(terms)``, ``len(terms) + 1`` slots;
    ``buffers`` (partial, seen, touched, cand) of one slot per document, partial and seen
    zero; ``best`` (labels, scores, heap) of k slots each, ``held`` entries of the best list
    so far; ``visibility``: only the documents whose labels its columns offer. Returns the
    entries after, or -1 when a known term's idf is not positive (not exact; nothing done)."""
    term_ptr, post_doc, post_tf = segment
    doc_len, alive, doc_label = docs
    upper, order, rest = plan
    partial, seen, touched, cand = buffers
    best_label, best_score, heap = best
    if bounds.shape not in ((term_ptr.shape[0] - 1, 2), (0, 2)):
        raise ValueError("bounds must have one row per term of the segment, or none")
    if terms.shape != idf.shape or terms.ndim != 1 or not (
            upper.shape[0] == order.shape[0] == terms.shape[0] == rest.shape[0] - 1):
        raise ValueError("terms, idf, upper and order need a slot per occurrence, rest one more")
    if not (partial.shape[0] == seen.shape[0] == touched.shape[0] == cand.shape[0]
            <= doc_len.shape[0]):
        raise ValueError("partial, seen, touched and cand must have one slot per document")
    if not best_label.shape == best_score.shape == heap.shape or heap.shape[0] == 0:
        raise ValueError("best_label, best_score and heap must have k > 0 slots")
    if not 0 <= held <= heap.shape[0]:
        raise ValueError("held must be within the best list")
    k1, base, per_len = norm
    if base < 0.0 or per_len < 0.0:
        raise ValueError("base and per_len must be >= 0 (k1 > 0, 0 <= b <= 1)")
    columns = None if visibility is None else (*visibility[:2], int(visibility[2]),
                                               *visibility[3:])
    return int(_search(term_ptr, post_doc, post_tf, bounds, doc_len, alive, doc_label, terms,
                       idf, float(k1), float(base), float(per_len), upper, order, rest,
                       partial, seen, touched, cand, best_label, best_score, int(held), heap,
                       columns))


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input, without and with a filter."""
    segment = (np.array([0, 2, 3], np.int64), np.array([0, 1, 1], np.int32),
               np.array([1.0, 2.0, 1.0], np.float32))
    docs = (np.array([3.0, 4.0]), np.ones(2, np.uint8), np.array([7, 8], np.int64))
    columns: Visibility = (np.ones(9, bool), np.zeros(9, np.int32), 0, np.zeros(9, np.int8),
                           np.zeros(0, np.int8), np.zeros(9, np.int32), np.zeros(0, np.int32))
    found = []
    for visibility in (None, columns):
        buffers = (np.zeros(2), np.zeros(2, np.uint8), np.empty(2, np.int64),
                   np.empty(2, np.int64))
        best = (np.empty(1, np.int64), np.empty(1), np.empty(1))
        held = maxscore_search(segment, np.zeros((2, 2)), docs,
                               np.array([0, 1], np.int64), np.array([0.5, 0.2]),
                               (1.5, 1.5 * 0.25, 1.5 * 0.75 / 3.5),
                               (np.empty(2), np.empty(2, np.int64), np.empty(3)), buffers, best,
                               0, visibility)
        found.append((best[0][:held], best[1][:held]))
    return found
