"""Graphs that embed a padded batch of texts with the int8 model, for ``bench.embed_batching``.

The shipped ``minilm-int8`` quantises each MatMul's activations with one scale and zero point
over the whole input tensor (onnxruntime's ``DynamicQuantizeLinear``, also inside its fused
``DynamicQuantizeMatMul``): in a batch, a text's integers depend on its batch-mates and on the
padding. Two rewrites of the graph onnxruntime optimises it into (level "extended": the same
fused operators as the server's "all"), each loaded with optimisation off:

- ``per_sample_quantised``: every quantisation point computes its range per text over the
  text's real tokens (the attention mask), then the very scale, zero point and integers
  ``DynamicQuantizeLinear`` computes for that text alone; the integer MatMul runs without
  the activations' zero point, which is taken off afterwards (``zp x column sums`` of the
  weights, exact in int32); the float epilogue is the fused kernel's (``float(acc) x
  (a_scale x w_scale) + bias``, a multiply then an add).
- ``per_sample_softmax_sums``: on top, the sum of each attention softmax runs per text, over
  the text's unpadded block (an ONNX ``Loop`` over the batch): onnxruntime's ``ReduceSum``
  adds a row in an order that depends on the row's length and alignment, so over a padded
  row it gives other last bits, which the next layer's quantisation can turn into whole
  steps.

Needs the ``onnx`` package (the ``dev`` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from sidecar.embedding.onnx import save_optimized

_QUANTISED = ("DynamicQuantizeLinear", "DynamicQuantizeMatMul", "MatMulIntegerToFloat")


def optimised(source: Path, target: Path) -> Any:
    """``source`` as onnxruntime optimises it at level "extended" (written to ``target``)."""
    save_optimized(str(source), str(target), "extended")
    return onnx.load(str(target))


class _Builder:
    """Appends nodes and constants with names of their own (prefix ``bq_``)."""

    def __init__(self, model: Any) -> None:
        self.graph = model.graph
        self.weights = {t.name: t for t in self.graph.initializer}
        self.nodes: list[Any] = []
        self.constants: list[Any] = []

    def node(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], f"bq_{output}", **attrs))
        return output

    def const(self, name: str, value: Any) -> str:
        self.constants.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def finish(self, head: list[Any]) -> Any:
        del self.graph.node[:]
        self.graph.node.extend(head + self.nodes)
        self.graph.initializer.extend(self.constants)
        return self.graph


def per_sample_quantised(model: Any) -> Any:
    """``model`` (optimised, ``optimised``) with each text of a batch quantised alone."""
    b = _Builder(model)
    f32 = np.float32
    for name, value in (("bq_inf", f32(np.inf)), ("bq_ninf", f32(-np.inf)), ("bq_zero", f32(0)),
                        ("bq_one", f32(1)), ("bq_qmax", f32(255)),
                        ("bq_flat", np.array([-1], np.int64)), ("bq_ax2", np.array([2], np.int64))):
        b.const(name, value)
    head = [helper.make_node("Cast", ["attention_mask"], ["bq_valid"], "bq_valid",
                             to=TensorProto.BOOL)]
    params: dict[str, tuple[str, str, str]] = {}

    def quantise(x: str) -> tuple[str, str, str]:
        """(uint8 tensor, int32 zero point [B,1,1], scale [B,1,1]) of ``x`` [B,S,K]."""
        if x not in params:
            p = f"bq_{x}"
            lo = b.node("ReduceMin", [x], f"{p}_tmin", axes=[2], keepdims=0)
            hi = b.node("ReduceMax", [x], f"{p}_tmax", axes=[2], keepdims=0)
            lo = b.node("Where", ["bq_valid", lo, "bq_inf"], f"{p}_vmin")
            hi = b.node("Where", ["bq_valid", hi, "bq_ninf"], f"{p}_vmax")
            lo = b.node("ReduceMin", [lo], f"{p}_mn", axes=[1], keepdims=1)
            hi = b.node("ReduceMax", [hi], f"{p}_mx", axes=[1], keepdims=1)
            lo = b.node("Min", [lo, "bq_zero"], f"{p}_mn0")  # the range includes zero
            hi = b.node("Max", [hi, "bq_zero"], f"{p}_mx0")
            span = b.node("Div", [b.node("Sub", [hi, lo], f"{p}_rng"), "bq_qmax"], f"{p}_sc")
            same = b.node("Equal", [hi, lo], f"{p}_same")
            scale = b.node("Where", [same, "bq_one", span], f"{p}_scale")  # [B,1]
            zero = b.node("Sub", ["bq_zero", b.node("Div", [lo, scale], f"{p}_q")], f"{p}_iz")
            zero = b.node("Round", [b.node("Clip", [zero, "bq_zero", "bq_qmax"], f"{p}_cz")],
                          f"{p}_zpf")
            zp8 = b.node("Cast", [zero], f"{p}_zpu", to=TensorProto.UINT8)
            xq = b.node("QuantizeLinear", [
                x, b.node("Reshape", [scale, "bq_flat"], f"{p}_scale1"),
                b.node("Reshape", [zp8, "bq_flat"], f"{p}_zp1")], f"{p}_xq", axis=0)
            zp32 = b.node("Cast", [zero], f"{p}_zpi", to=TensorProto.INT32)
            params[x] = (xq, b.node("Unsqueeze", [zp32, "bq_ax2"], f"{p}_zpi3"),
                         b.node("Unsqueeze", [scale, "bq_ax2"], f"{p}_scale3"))
        return params[x]

    def matmul(x: str, weight: str, weight_scale: str, bias: str, out: str) -> None:
        xq, zp, scale = quantise(x)
        p = f"bq_{out}"
        sums = numpy_helper.to_array(b.weights[weight]).astype(np.int64).sum(axis=0)
        acc = b.node("MatMulInteger", [xq, weight], f"{p}_acc")
        shift = b.node("Mul", [zp, b.const(f"{p}_colsum", sums.astype(np.int32))], f"{p}_corr")
        acc = b.node("Cast", [b.node("Sub", [acc, shift], f"{p}_acc2")], f"{p}_f",
                     to=TensorProto.FLOAT)
        mult = b.node("Mul", [scale, weight_scale], f"{p}_mult")
        b.node("Add", [b.node("Mul", [acc, mult], f"{p}_y"), bias], out)

    source_of: dict[str, str] = {}
    for node in list(b.graph.node):
        if node.op_type not in _QUANTISED:
            b.nodes.append(node)
        elif node.op_type == "DynamicQuantizeLinear":
            source_of[node.output[0]] = node.input[0]
        elif node.op_type == "DynamicQuantizeMatMul":
            x, weight, weight_scale, _zp, bias = node.input
            matmul(x, weight, weight_scale, bias, node.output[0])
        else:  # MatMulIntegerToFloat over a DynamicQuantizeLinear's output
            xq, weight, _a_scale, weight_scale, _a_zp, _w_zp, bias = node.input
            matmul(source_of[xq], weight, weight_scale, bias, node.output[0])
    _check_symmetric(b.weights)
    b.finish(head)
    return model


def _check_symmetric(weights: dict[str, Any]) -> None:
    """The zero-point rewrite assumes symmetric weights (zero points all 0)."""
    for name, tensor in weights.items():
        if name.endswith("_zero_point") and tensor.data_type == TensorProto.INT8:
            if np.any(numpy_helper.to_array(tensor)):
                raise ValueError(f"{name}: asymmetric weights are not handled")


def per_sample_softmax_sums(model: Any) -> Any:
    """``model`` with the sum of each softmax (``quantize.portable_softmax``'s ReduceSum)
    computed per text over its unpadded ``[1, heads, n, n]`` block."""
    b = _Builder(model)
    for name, value in (("ls_last", [-1]), ("ls_axis1", [1]), ("ls_zero", [0]), ("ls_one", [1]),
                        ("ls_axes", [0, 2, 3]), ("ls_pads", [0] * 6)):
        b.const(name, np.array(value, np.int64))
    b.const("ls_onef", np.float32(1))
    head = [helper.make_node("ReduceSum", ["attention_mask", "ls_axis1"], ["ls_len"],
                             "ls_len", keepdims=0),
            helper.make_node("Shape", ["attention_mask"], ["ls_S"], "ls_S", start=1, end=2),
            helper.make_node("Shape", ["attention_mask"], ["ls_B1"], "ls_B1", start=0, end=1),
            helper.make_node("Squeeze", ["ls_B1"], ["ls_B"], "ls_B")]
    for node in list(b.graph.node):
        if node.op_type == "ReduceSum" and node.name.endswith("_sum"):
            loop = helper.make_node("Loop", ["ls_B", ""], [f"{node.name}_stack"],
                                    f"{node.name}_loop", body=_block_sum(node.input[0],
                                                                         node.name))
            b.nodes += [loop, helper.make_node("Squeeze", [f"{node.name}_stack", "ls_one"],
                                               [node.output[0]], f"{node.name}_squeeze")]
        else:
            b.nodes.append(node)
    b.finish(head)
    return model


def _block_sum(x: str, name: str) -> Any:
    """A Loop body: text ``it``'s softmax sums over its own block of ``x``, padded with 1."""
    p = f"{name}_it"

    def n(op: str, inputs: list[str], out: str, **attrs: Any) -> Any:
        return helper.make_node(op, inputs, [f"{p}_{out}"], f"{p}_{out}", **attrs)

    nodes = [
        n("Unsqueeze", ["it", "ls_zero"], "i"),
        n("Add", [f"{p}_i", "ls_one"], "j"),
        n("Gather", ["ls_len", f"{p}_i"], "n"),
        n("Concat", [f"{p}_i", "ls_zero", "ls_zero"], "starts", axis=0),
        n("Concat", [f"{p}_j", f"{p}_n", f"{p}_n"], "ends", axis=0),
        n("Slice", [x, f"{p}_starts", f"{p}_ends", "ls_axes"], "block"),
        n("ReduceSum", [f"{p}_block", "ls_last"], "sum", keepdims=1),
        n("Sub", ["ls_S", f"{p}_n"], "padding"),
        n("Concat", ["ls_pads", f"{p}_padding", "ls_zero"], "pads", axis=0),
        n("Pad", [f"{p}_sum", f"{p}_pads", "ls_onef"], "padded"),
        n("Identity", ["cond"], "cond"),
    ]
    return helper.make_graph(
        nodes, f"{p}_body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(f"{p}_cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info(f"{p}_padded", TensorProto.FLOAT, None)])


VARIANTS: dict[str, Callable[[Any], Any]] = {
    "per-sample quantisation": per_sample_quantised,
    "per-sample quantisation and softmax sums":
        lambda model: per_sample_softmax_sums(per_sample_quantised(model)),
}


def build(source: Path, folder: Path) -> dict[str, Path]:
    """Each of ``VARIANTS`` built from ``source`` into ``folder``: name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    built = {}
    for i, (name, rewrite) in enumerate(VARIANTS.items()):
        out = folder / f"batch-{i}.onnx"
        onnx.save(rewrite(optimised(source, folder / "extended.onnx")), str(out))
        built[name] = out
    return built
