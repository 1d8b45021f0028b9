"""all-MiniLM-L6-v2 on onnxruntime: mean pooling over the attention mask, L2-normalised, 384-d."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from sidecar.embedding.counting import TokenCounter
from sidecar.embedding.model_files import ModelFiles

MAX_TOKENS = 256


def load_tokenizer(path: str, max_tokens: int = MAX_TOKENS) -> Tokenizer:
    """The model's WordPiece tokenizer, padded to the longest input and truncated at max_tokens.

    The shipped tokenizer.json pads everything to 128; padding to the longest input keeps a
    short query short (the encoder cost grows with the padded length).
    """
    tokenizer = Tokenizer.from_file(path)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


GRAPH_LEVELS = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def save_optimized(source: str, target: str, level: str = "all") -> None:
    """Write ``source`` as onnxruntime optimises it at ``level`` (load it with "disabled")."""
    options = ort.SessionOptions()
    options.graph_optimization_level = GRAPH_LEVELS[level]
    options.optimized_model_filepath = target
    ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])


def _session(path: str, threads: int, level: str = "all") -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = GRAPH_LEVELS[level]
    # Workers spin between the operators of one run (a worker put to sleep between two
    # MatMuls costs a wake-up each, which eats most of the second thread's gain; see
    # docs/decisions/0004-long-text-session.md) but stop when the run returns: left spinning,
    # they would take the cores from the rest of the call and from other work.
    spin = "1" if threads > 1 else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spin)
    options.add_session_config_entry("session.force_spinning_stop", "1")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


def _output_dim(session: ort.InferenceSession) -> int:
    size = session.get_outputs()[0].shape[-1]
    if not isinstance(size, int):
        raise ValueError(f"the model's hidden size is not fixed ({size!r})")
    return size


@dataclass(frozen=True, slots=True)
class QueryTokens:
    """A query's model input (one row): token ids and attention mask, already cut."""

    ids: np.ndarray
    mask: np.ndarray

    @property
    def length(self) -> int:
        return int(self.ids.shape[1])


@dataclass(frozen=True, slots=True)
class _Graph:
    """One model's sessions, swapped as a whole (``Embedder.adopt``)."""

    files: ModelFiles
    session: ort.InferenceSession
    long: ort.InferenceSession | None  # the multi-thread session for long queries


class Embedder:
    """Thread-safe text -> unit vector encoder.

    ``embed`` (imports) and ``embed_one`` (a memory) run on ``threads`` intra-op threads.
    ``embed_query`` (a search or Inject text, the call someone waits on) runs a text of
    ``long_text_tokens`` model tokens or more on a second session with ``long_text_threads``
    (1 = no second session; ``ServerConfig`` has the defaults and why): same model and
    weights, so the vectors are the same either way. ``graph_level`` is onnxruntime's graph
    optimisation level (``GRAPH_LEVELS``). ``adopt`` switches to another model's graph in
    place.
    """

    def __init__(self, files: ModelFiles, threads: int = 1, max_tokens: int = MAX_TOKENS,
                 long_text_threads: int = 1, long_text_tokens: int = MAX_TOKENS,
                 graph_level: str = "all") -> None:
        self.max_tokens = max_tokens
        self.long_text_tokens = long_text_tokens
        self._tokenizer = load_tokenizer(str(files.tokenizer), max_tokens)
        self._counter = TokenCounter(Tokenizer.from_file(str(files.tokenizer)))
        session = _session(str(files.onnx), threads, graph_level)
        long = (_session(str(files.onnx), long_text_threads, graph_level)
                if long_text_threads > threads else None)
        self._graph = _Graph(files, session, long)
        self._lock = threading.Lock()  # tokenizers' padding state is shared
        self.dim = _output_dim(session)  # of the embeddings, read from the model
        self.generation = 0  # counts adopt() calls: a vector from an older one is stale

    @property
    def name(self) -> str:
        """The model's name in ``sidecar.embedding.models``."""
        return self._graph.files.name

    @property
    def files(self) -> ModelFiles:
        return self._graph.files

    @property
    def _long(self) -> ort.InferenceSession | None:
        return self._graph.long

    def adopt(self, other: Embedder) -> None:
        """Embed with ``other``'s model from now on (same tokenizer and dimension)."""
        if other.dim != self.dim:
            raise ValueError(f"cannot switch from {self.dim}-d to {other.dim}-d embeddings")
        self._graph = other._graph
        self.generation += 1

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised. Batches are length-sorted; one text
        per run for a model whose vectors depend on the batch (``batch_invariant``)."""
        if not self.files.batch_invariant:
            batch_size = 1
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """One text (a memory): the one-thread session, up to the model's cap."""
        vector: np.ndarray = self._embed_batch([text])[0]
        return vector

    def embed_query(self, text: str, max_tokens: int = 0) -> np.ndarray:
        """A query: cut at ``max_tokens`` model tokens (with [CLS] and [SEP]; 0 = the model's
        cap), on the long-text session from ``long_text_tokens`` on."""
        return self.embed_tokens(self.tokenize_query(text, max_tokens))

    def tokenize_query(self, text: str, max_tokens: int = 0) -> QueryTokens:
        """``text`` as ``embed_query`` feeds it to the model (tokenised once: ``is_long`` and
        ``embed_tokens`` take the result)."""
        ids, mask = self._encode([text], max_tokens)
        return QueryTokens(ids, mask)

    def embed_tokens(self, tokens: QueryTokens) -> np.ndarray:
        """``embed_query`` of the text ``tokens`` came from."""
        vector: np.ndarray = self._run(tokens.ids, tokens.mask, query=True)[0]
        return vector

    def is_long(self, tokens: QueryTokens) -> bool:
        """Whether ``embed_tokens(tokens)`` runs on the multi-thread session (it then takes
        the cores: work meant to overlap it should wait)."""
        return self._long is not None and tokens.length >= self.long_text_tokens

    def is_parallel(self, text: str, max_tokens: int = 0) -> bool:
        """``is_long`` of ``text`` (not tokenised when shorter in characters than
        ``long_text_tokens``: a token spans at least one character)."""
        if self._long is None or len(text) + 2 < self.long_text_tokens:
            return False
        return self.is_long(self.tokenize_query(text, max_tokens))

    def _cap(self, max_tokens: int) -> int:
        return min(max_tokens, self.max_tokens) if max_tokens > 0 else self.max_tokens

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens or truncation (for budgets)."""
        return self._counter(text)

    def _embed_batch(self, texts: list[str], max_tokens: int = 0) -> np.ndarray:
        ids, mask = self._encode(texts, max_tokens)
        return self._run(ids, mask)

    def _encode(self, texts: list[str], max_tokens: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(ids, attention mask) of ``texts``, padded to the longest; a single text is cut at
        ``max_tokens`` (0 = the model's cap)."""
        with self._lock:
            # One text (a query): ``encode`` keeps the GIL for its few microseconds, where
            # ``encode_batch`` lets it go and then waits for it behind whatever thread runs.
            encodings = ([self._tokenizer.encode(texts[0])] if len(texts) == 1
                         else self._tokenizer.encode_batch(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        cap = self._cap(max_tokens)
        if len(texts) == 1 and ids.shape[1] > cap:  # keep [CLS] + the first tokens + [SEP]
            ids = np.concatenate([ids[:, : cap - 1], ids[:, -1:]], axis=1)
            mask = mask[:, :cap]
        return ids, mask

    def _run(self, ids: np.ndarray, mask: np.ndarray, query: bool = False) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        graph = self._graph  # one model for the whole call, even across an adopt()
        session = graph.session
        if query and graph.long is not None and ids.shape[1] >= self.long_text_tokens:
            session = graph.long
        return pooled(session.run(None, feeds)[0], mask)


def pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The model's token states ``hidden`` (B, S, dim) averaged over ``mask`` (B, S) and
    L2-normalised: one unit vector per row."""
    weights = mask[:, :, None].astype(np.float32)
    mean = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(mean, axis=1, keepdims=True)
    unit: np.ndarray = (mean / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit
