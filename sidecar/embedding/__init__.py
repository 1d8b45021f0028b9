"""Sentence embeddings: all-MiniLM-L6-v2 via onnxruntime (imported only in ``onnx``)."""

from sidecar.embedding.model_files import ModelFiles, bundled_model_files
from sidecar.embedding.onnx import Embedder

__all__ = ["Embedder", "ModelFiles", "bundled_model_files"]
