"""The BM25 postings on disk: ``DATA_DIR/lexical.npz`` plus a JSON meta beside it.

Start-up spends most of its time tokenising every memory; the saved postings skip that. The
meta holds a checksum of the live (label, text) rows the postings were built from, a
checksum of the file, the format (the analyser's rules: a change bumps it) and the analyser
setting (``Analyzer.name``: stemming on or off). On start the rows read from SQLite and the
configured analyser are checked against it; any difference names a reason and the caller
tokenises afresh (and saves again).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sidecar.retrieval.lexical.bm25 import Postings
from sidecar.retrieval.lexical.tokenize import STOP_WORDS
from sidecar.retrieval.vector.persist import file_checksum  # the same blake2b of a file

POSTINGS_FILE = "lexical.npz"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class PostingsMeta:
    format: int
    stop_words: str  # checksum of STOP_WORDS
    count: int
    content_checksum: str  # blake2b of the live (label, text) rows, in label order
    file_checksum: str
    analyser: str = "plain"  # Analyzer.name; metas written before the setting existed: plain


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def content_checksum(labels: Sequence[int], texts: Sequence[str]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for label, text in sorted(zip(labels, texts, strict=True)):
        digest.update(label.to_bytes(8, "little", signed=True))
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


def _stop_words() -> str:
    return hashlib.blake2b("\n".join(sorted(STOP_WORDS)).encode(), digest_size=8).hexdigest()


def temp_paths(path: Path) -> tuple[Path, Path]:
    """The temporary files ``save`` writes beside ``path`` (file, meta)."""
    return path.with_name(path.name + ".tmp.npz"), path.with_name(path.name + ".json.tmp")


def save(path: Path, postings: Postings, checksum: str) -> None:
    """Write ``postings`` (built from rows with ``content_checksum`` = checksum): file first,
    meta last, each through a temporary file (removed when the write fails)."""
    tmp, tmp_meta = temp_paths(path)
    terms = "\x00".join(postings.terms).encode("utf-8", "surrogatepass")
    try:
        np.savez(tmp, terms=np.frombuffer(terms, np.uint8), labels=postings.labels,
                 lengths=postings.lengths, offsets=postings.offsets,
                 term_ids=postings.term_ids, tfs=postings.tfs)
        meta = PostingsMeta(FORMAT, _stop_words(), len(postings.labels), checksum,
                            file_checksum(tmp), postings.analyser)
        os.replace(tmp, path)
        tmp_meta.write_text(json.dumps(asdict(meta), indent=1), encoding="utf-8")
        os.replace(tmp_meta, meta_path(path))
    except BaseException:
        tmp.unlink(missing_ok=True)
        tmp_meta.unlink(missing_ok=True)
        raise


def load(path: Path, checksum: str, analyser: str) -> tuple[Postings | None, str]:
    """The saved postings if built from rows with ``content_checksum`` = checksum by the
    analyser named ``analyser``, else (None, why not)."""
    if not path.exists() or not meta_path(path).exists():
        return None, f"missing: no {path.name} or its meta"
    try:
        meta = PostingsMeta(**json.loads(meta_path(path).read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        return None, f"corrupt: unreadable meta ({exc})"
    if (meta.format, meta.stop_words) != (FORMAT, _stop_words()):
        return None, "stale: saved with another analyser"
    if meta.analyser != analyser:
        return None, f"stale: saved with analyser {meta.analyser}, configured {analyser}"
    if meta.content_checksum != checksum:
        return None, "stale: the memories in SQLite differ from the ones indexed"
    if file_checksum(path) != meta.file_checksum:
        return None, "corrupt: file checksum differs from the meta"
    try:
        with np.load(path, allow_pickle=False) as data:
            raw = bytes(data["terms"])
            postings = Postings(
                terms=raw.decode("utf-8", "surrogatepass").split("\x00") if raw else [],
                analyser=meta.analyser,
                labels=data["labels"], lengths=data["lengths"], offsets=data["offsets"],
                term_ids=data["term_ids"], tfs=data["tfs"])
    except (OSError, ValueError, KeyError) as exc:
        return None, f"corrupt: unreadable postings ({exc})"
    if len(postings.labels) != meta.count or len(postings.offsets) != meta.count + 1:
        return None, "corrupt: postings do not match the meta"
    return postings, ""
