"""Build ``minilm-int8``: the packaged MiniLM with integer MatMuls (run by ``make install``).

The packaged graph stores each weight as int8 plus a scale and dequantises it with a
``Cast`` + ``Mul`` pair before its fp32 MatMul. This step folds those pairs into fp32 constants
(the very weights the packaged graph computes with), then applies onnxruntime's dynamic
quantisation: uint8 activations quantised per call, int8 weights with a scale per output
channel (per-tensor scales move the vectors about 4x further from fp32), **on 7 bits**
(``reduce_range``: every weight in [-64, 64]).

Why 7 bits: onnxruntime's x86 kernels multiply uint8 activations by int8 weights. With VNNI or
AMX the products of four pairs are summed straight into int32 (exact); without them (AVX2,
AVX-512 without VNNI) ``vpmaddubsw`` first adds two products into a *saturating* int16. With
8-bit weights two products reach 2 x 255 x 127 = 64,770 and saturate, so the same text got
another vector on another CPU (cosine 0.97 seen between AVX-512 VNNI and an emulated AVX2
CPU). With 7-bit weights the pair stays within 2 x 255 x 64 = 32,640 < 32,767: every x86
kernel computes the same integer products.

Why no ``Softmax``: each layer quantises its activations anew, so a difference in the last bit
of one float can move a value across a rounding step, and such steps grow layer after layer
(one text moved to cosine 0.995 when only the softmax's last bits changed). Of the float
operators left, onnxruntime's ``Softmax`` alone computes other last bits with AVX2 than with
AVX-512 (its sum runs over 8 or 16 lanes); the graph computes it as ``Exp(x - ReduceMax(x)) /
ReduceSum(...)``, whose kernels give the same bits on both. So a text's vector depends on the
text alone on every x86-64 CPU with AVX2 (docs/decisions/0013-portable-int8.md). With the
pinned onnx and onnxruntime the output is byte-for-byte reproducible; its sha256 is checked.

Needs the ``onnx`` package (a build-time dependency, in the ``dev`` extra); the server never
imports this module.

    python -m sidecar.embedding.quantize [--out PATH]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

from sidecar.embedding.model_files import (
    INT8_FILE,
    INT8_SHA256,
    LEGACY_INT8_FILE,
    LEGACY_INT8_SHA256,
    built_model_dir,
    bundled_model_files,
    file_sha256,
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


def portable_softmax(model: Any) -> Any:
    """``model`` with each last-axis ``Softmax`` spelt out as ``Exp(x - max) / sum``."""
    graph = model.graph
    axes = "portable_softmax_axes"
    graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), axes))
    nodes = []
    for node in graph.node:
        if node.op_type != "Softmax":
            nodes.append(node)
            continue
        if [a.i for a in node.attribute if a.name == "axis"] not in ([], [-1]):
            raise ValueError(f"{node.name}: only a last-axis Softmax is spelt out")
        x, y, name = node.input[0], node.output[0], node.name
        nodes += [
            helper.make_node("ReduceMax", [x], [f"{name}_max"], f"{name}_max", axes=[-1]),
            helper.make_node("Sub", [x, f"{name}_max"], [f"{name}_shift"], f"{name}_shift"),
            helper.make_node("Exp", [f"{name}_shift"], [f"{name}_exp"], f"{name}_exp"),
            helper.make_node("ReduceSum", [f"{name}_exp", axes], [f"{name}_sum"], f"{name}_sum"),
            helper.make_node("Div", [f"{name}_exp", f"{name}_sum"], [y], f"{name}_div"),
        ]
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def build(out: Path, seven_bit: bool = True) -> str:
    """Write the int8 model to ``out``; returns its sha256. ``seven_bit=False`` builds the
    earlier graph (8-bit weights, onnxruntime's Softmax) whose vectors depend on the CPU."""
    source = bundled_model_files(verify=True).onnx
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = Path(scratch) / "minilm-fp32.onnx"
        model = dequantised(onnx.load(str(source)))
        onnx.save(portable_softmax(model) if seven_bit else model, str(fp32))
        partial = Path(scratch) / out.name
        advice = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)  # onnxruntime's pre-processing advice
        try:
            quantize_dynamic(str(fp32), str(partial), weight_type=QuantType.QInt8,
                             per_channel=True, reduce_range=seven_bit)
        finally:
            logging.getLogger().setLevel(advice)
        partial.replace(out)
    return file_sha256(out)


def ensure(out: Path, expected: str, seven_bit: bool = True) -> bool:
    """Build ``out`` unless it already has sha256 ``expected``; False (and why, on stderr)
    when the build does not reproduce it."""
    if out.is_file() and file_sha256(out) == expected:
        print(f"{out}: up to date")
        return True
    digest = build(out, seven_bit)
    if digest != expected:
        print(f"{out}: sha256 {digest}, expected {expected} (onnx/onnxruntime versions differ "
              "from the pinned ones?)", file=sys.stderr)
        return False
    print(f"{out}: built")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=built_model_dir() / INT8_FILE)
    parser.add_argument("--legacy-out", default=str(built_model_dir() / LEGACY_INT8_FILE),
                        help="the 8-bit-weight build, served to stores recorded with it "
                             "until they are re-embedded ('' = not built)")
    args = parser.parse_args(argv)
    built = ensure(args.out, INT8_SHA256)
    legacy = not args.legacy_out or ensure(Path(args.legacy_out), LEGACY_INT8_SHA256,
                                           seven_bit=False)
    return 0 if built and legacy else 1


if __name__ == "__main__":
    raise SystemExit(main())
