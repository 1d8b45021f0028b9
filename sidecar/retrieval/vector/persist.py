"""The hnsw index on disk: ``DATA_DIR/vectors.hnsw`` plus a JSON meta beside it.

The meta says what the file holds: live count, highest label, a checksum of the live
(label, vector) pairs it was saved from, a checksum of the file itself and the build
parameters. On start the live rows read from SQLite are checked against it; any
disagreement names a reason and the caller rebuilds. Content (not timestamps) is compared,
so a memory written after the save -- or committed but not yet indexed when the save ran --
always shows up as stale, and a damaged file as corrupt.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sidecar.retrieval.vector.hnsw import HnswVectors

INDEX_FILE = "vectors.hnsw"
FORMAT = 1
_CHUNK_ROWS = 8192
_CHUNK_BYTES = 1 << 22


@dataclass(frozen=True, slots=True)
class IndexMeta:
    format: int
    dim: int
    count: int
    max_seq: int
    content_checksum: str  # blake2b of the live (label, vector) pairs, in label order
    file_checksum: str  # blake2b of the index file
    file_bytes: int
    m: int
    ef_construction: int


@dataclass(frozen=True, slots=True)
class Loaded:
    """The outcome of opening a saved index: the index, or why it cannot be used."""

    index: HnswVectors | None
    reason: str  # "" when loaded


def meta_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".json")


def content_checksum(labels: np.ndarray, matrix: np.ndarray) -> str:
    """Order-independent checksum of (label, vector) rows."""
    order = np.argsort(labels, kind="stable")
    digest = hashlib.blake2b(digest_size=16)
    for start in range(0, len(order), _CHUNK_ROWS):
        rows = order[start : start + _CHUNK_ROWS]
        digest.update(np.ascontiguousarray(labels[rows], dtype="<i8").tobytes())
        digest.update(np.ascontiguousarray(matrix[rows], dtype="<f4").tobytes())
    return digest.hexdigest()


def file_checksum(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def temp_paths(path: Path) -> tuple[Path, Path]:
    """The temporary files a save writes beside ``path`` (index, meta)."""
    return path.with_name(path.name + ".tmp"), path.with_name(path.name + ".json.tmp")


def _no_space_left(directory: Path) -> bool:
    """The file system is full (a write that filled it may have been cut short)."""
    st = os.statvfs(directory)
    return st.f_bavail == 0 or st.f_bfree == 0


def write_file(index: HnswVectors, path: Path) -> Path:
    """Write the index to a temporary file beside ``path``; the caller keeps writes out."""
    tmp = temp_paths(path)[0]
    try:
        index.save(tmp)
        if _no_space_left(tmp.parent):  # hnswlib does not check its writes
            raise OSError(errno.ENOSPC, "no space left on device: the index file may be cut "
                          "short", str(tmp))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def commit(
    tmp: Path, path: Path, labels: np.ndarray, matrix: np.ndarray, *, dim: int, m: int,
    ef_construction: int,
) -> IndexMeta:
    """Describe the file written by ``write_file`` (live rows: labels, matrix) and move it in.

    File first, meta last: a crash between the two renames leaves a meta that does not
    match the file, so the next start rebuilds.
    """
    tmp_meta = temp_paths(path)[1]
    try:
        meta = IndexMeta(
            format=FORMAT, dim=dim, count=len(labels),
            max_seq=int(labels.max()) if len(labels) else 0,
            content_checksum=content_checksum(labels, matrix),
            file_checksum=file_checksum(tmp), file_bytes=tmp.stat().st_size, m=m,
            ef_construction=ef_construction,
        )
        os.replace(tmp, path)
        with tmp_meta.open("w", encoding="utf-8") as handle:
            json.dump(asdict(meta), handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_meta, meta_path(path))
    except BaseException:
        tmp.unlink(missing_ok=True)
        tmp_meta.unlink(missing_ok=True)
        raise
    return meta


def load(
    path: Path, labels: np.ndarray, matrix: np.ndarray, *, dim: int, m: int,
    ef_construction: int, ef_search: int,
) -> Loaded:
    """Open the saved index if it holds exactly the live rows (labels, matrix) from SQLite."""
    meta, reason = _read_meta(path)
    if meta is None:
        return Loaded(None, reason)
    reason = _stale_reason(meta, labels, dim=dim, m=m, ef_construction=ef_construction)
    if not reason and path.stat().st_size != meta.file_bytes:
        reason = f"corrupt: file has {path.stat().st_size} bytes, meta says {meta.file_bytes}"
    if not reason and file_checksum(path) != meta.file_checksum:
        reason = "corrupt: file checksum differs from the meta"
    if not reason and content_checksum(labels, matrix) != meta.content_checksum:
        reason = "stale: embeddings in SQLite differ from the ones indexed"
    if reason:
        return Loaded(None, reason)
    try:
        return Loaded(HnswVectors.load(path, dim, labels, ef_search), "")
    except (RuntimeError, ValueError, MemoryError) as exc:
        return Loaded(None, f"corrupt: hnswlib could not load it ({exc})")


def _read_meta(path: Path) -> tuple[IndexMeta | None, str]:
    if not path.exists():
        return None, f"missing: no {path.name}"
    try:
        raw = json.loads(meta_path(path).read_text(encoding="utf-8"))
        return IndexMeta(**raw), ""
    except FileNotFoundError:
        return None, f"missing: no {meta_path(path).name}"
    except (ValueError, TypeError) as exc:
        return None, f"corrupt: unreadable meta ({exc})"


def _stale_reason(
    meta: IndexMeta, labels: np.ndarray, *, dim: int, m: int, ef_construction: int
) -> str:
    max_seq = int(labels.max()) if len(labels) else 0
    if meta.format != FORMAT:
        return f"stale: format {meta.format}, expected {FORMAT}"
    if meta.dim != dim:
        return f"stale: dimension {meta.dim}, expected {dim}"
    if (meta.m, meta.ef_construction) != (m, ef_construction):
        return (f"stale: built with m={meta.m} ef_construction={meta.ef_construction}, "
                f"configured m={m} ef_construction={ef_construction}")
    if meta.count != len(labels):
        return f"stale: {meta.count} vectors indexed, {len(labels)} live memories in SQLite"
    if meta.max_seq != max_seq:
        return f"stale: highest seq indexed {meta.max_seq}, in SQLite {max_seq}"
    return ""
