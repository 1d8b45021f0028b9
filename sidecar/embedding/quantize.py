"""Build ``minilm-int8``: the packaged MiniLM with integer MatMuls (run by ``make install``).

The packaged graph stores each weight as int8 plus a scale and dequantises it with a
``Cast`` + ``Mul`` pair before its fp32 MatMul. This step folds those pairs into fp32 constants
(the very weights the packaged graph computes with), then applies onnxruntime's dynamic
quantisation (int8 weights with a scale per output channel: per-tensor scales move the
vectors about 4x further from fp32; uint8 activations quantised per call). With the pinned onnx and
onnxruntime the output is byte-for-byte reproducible; its sha256 is checked.

Needs the ``onnx`` package (a build-time dependency, in the ``dev`` extra); the server never
imports this module.

    python -m sidecar.embedding.quantize [--out PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

from sidecar.embedding.model_files import (
    INT8_SHA256,
    bundled_model_files,
    file_sha256,
    int8_model_path,
)

INT8 = 3  # onnx.TensorProto.INT8


def dequantised(model: Any) -> Any:
    """``model`` with every ``Mul(Cast(int8 initializer), scale)`` replaced by its fp32 value."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    folded, dropped = [], []
    for node in graph.node:
        source = inits.get(node.input[0]) if node.op_type == "Cast" else None
        if source is None or source.data_type != INT8:
            continue
        (mul,) = consumers[node.output[0]]
        scale = next(name for name in mul.input if name != node.output[0])
        weight = numpy_helper.to_array(source).astype(np.float32) * numpy_helper.to_array(
            inits[scale]).astype(np.float32)
        folded.append(numpy_helper.from_array(weight.astype(np.float32), mul.output[0]))
        dropped += [node, mul]
    for node in dropped:
        graph.node.remove(node)
    graph.initializer.extend(folded)
    used = {name for node in graph.node for name in node.input}
    for tensor in [t for t in graph.initializer if t.name not in used]:
        graph.initializer.remove(tensor)
    return model


def build(out: Path) -> str:
    """Write the int8 model to ``out``; returns its sha256."""
    source = bundled_model_files(verify=True).onnx
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = Path(scratch) / "minilm-fp32.onnx"
        onnx.save(dequantised(onnx.load(str(source))), str(fp32))
        partial = Path(scratch) / out.name
        quantize_dynamic(str(fp32), str(partial), weight_type=QuantType.QInt8, per_channel=True)
        partial.replace(out)
    return file_sha256(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=int8_model_path())
    args = parser.parse_args(argv)
    if args.out.is_file() and file_sha256(args.out) == INT8_SHA256:
        print(f"{args.out}: up to date")
        return 0
    digest = build(args.out)
    if digest != INT8_SHA256:
        print(f"{args.out}: sha256 {digest}, expected {INT8_SHA256} (onnx/onnxruntime "
              "versions differ from the pinned ones?)", file=sys.stderr)
        return 1
    print(f"{args.out}: built, sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
