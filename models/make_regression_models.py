#!/usr/bin/env python3
"""tinyaot's own operator-coverage regression models (not trained: fixed seeds).

  mbv2_block_int8.onnx  MobileNetV2-style block on [1,3,16,16]:
      conv3x3/2 + HardSwish, 1x1 expand + ReLU6, depthwise 3x3 + ReLU6,
      1x1 project, residual Add, HardSwish, squeeze-excite (GlobalAveragePool,
      1x1 conv, Sigmoid, Mul [1,C,H,W] x [1,C,1,1]), reflect Pad + conv3x3 +
      LeakyRelu, MaxPool, GlobalAveragePool, Flatten, Gemm.
  conv1d_int8.onnx      1-D conv model on [1,4,32]:
      conv1d k5 + ReLU, zero Pad, depthwise conv1d k3/2 + Tanh, conv1d k3
      dilation 2, Mul by a per-channel constant, Flatten, Gemm.
  decoder_int8.onnx     upsampler on [1,16,1,1]: ConvTranspose k4 + ReLU,
      ConvTranspose k4/2 pad 1 + ReLU, ConvTranspose k3/2 pad 1
      output_padding 1 -> [1,1,16,16].
  misc_ops_int8.onnx    the remaining operators on [1,3,8,8]: conv3x3 + ReLU +
      grouped conv3x3 (2 groups) + ReLU and 1x1 conv + HardSigmoid, AveragePool 3x3/2 pad 1 (count_include_pad
      1 and 0), Concat of the two (different scales), ReduceMean over H, W,
      Transpose NCHW -> NHWC + Reshape to [16,12], MatMul with a constant
      weight, MatMul of two activations (h^T h), Concat, Gemm, Softmax.
  data_ops_int8.onnx    data movement and resizing on [1,3,12,12]: conv3x3 +
      ReLU, Slice (channels 1:7, H and W step 2), Split [2, 4] on channels,
      nearest Resize x2 + 1x1 conv, bilinear Resize to 9x9 (half-pixel),
      Slice + Add + ReLU, conv3x3/2, GlobalAveragePool, Gemm.

Each is exported from torch (opset 17), quantized with onnxruntime's
quantize_static (QDQ, per-channel int8 weights, int8 activations, MinMax on
random calibration data, through codegen/driver/quantize.py), then given int8
graph input/output (make_digits_cnn.to_int8_io). The Sigmoid and Tanh outputs
are re-quantized the way the TFLite converter fixes them (Sigmoid 1/256, -128;
Tanh 1/128, 0; Softmax 1/256, -128), so the same file is valid for both numerics. Golden vectors:
onnxruntime's default CPU session on 16 int8 inputs (`outputs`).

    python3 models/make_regression_models.py        # rewrites the 4 files
"""
from __future__ import annotations

import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

OPSET = 17
N_CALIB = 64
N_GOLDEN = 16
FIXED_OUTPUT_Q = {"Sigmoid": (1.0 / 256, -128), "Tanh": (1.0 / 128, 0),
                  "Softmax": (1.0 / 256, -128)}


class MBV2Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.expand = nn.Conv2d(8, 24, 1)
        self.dw = nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.project = nn.Conv2d(24, 8, 1)
        self.se = nn.Conv2d(8, 8, 1)
        self.conv = nn.Conv2d(8, 8, 3)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        a = F.hardswish(self.stem(x))
        b = F.relu6(self.expand(a))
        b = F.relu6(self.dw(b))
        b = self.project(b)
        c = F.hardswish(a + b)
        s = torch.sigmoid(self.se(F.adaptive_avg_pool2d(c, 1)))
        c = c * s
        d = F.leaky_relu(self.conv(F.pad(c, (1, 1, 1, 1), mode="reflect")), 0.1)
        d = F.max_pool2d(d, 2)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(d, 1), 1))


class Conv1DNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 5, padding=2)
        self.c2 = nn.Conv1d(8, 8, 3, stride=2, groups=8)
        self.c3 = nn.Conv1d(8, 6, 3, dilation=2)
        self.register_buffer("gain", torch.linspace(-1.5, 2.0, 6).reshape(1, 6, 1))
        self.fc = nn.Linear(6 * 12, 5)

    def forward(self, x):
        y = F.relu(self.c1(x))
        y = torch.tanh(self.c2(F.pad(y, (1, 1))))
        y = self.c3(y) * self.gain
        return self.fc(torch.flatten(y, 1))


class DataOpsNet(nn.Module):
    """Slice (channels, stride-2 H/W), Split, nearest and bilinear Resize."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(2, 4, 1)
        self.c3 = nn.Conv2d(4, 6, 3, stride=2)
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        a = F.relu(self.c1(x))                               # 8 x 12 x 12
        s = a[:, 1:7, ::2, 1::2]                             # Slice: 6 x 6 x 6
        p1, p2 = torch.split(s, [2, 4], dim=1)               # Split
        u = self.c2(F.interpolate(p1, scale_factor=2.0, mode="nearest"))  # 4 x 12 x 12
        v = F.interpolate(p2, size=(9, 9), mode="bilinear", align_corners=False)
        w = F.relu(u[:, :, 1:10, 2:11] + v)                  # Slice + Add: 4 x 9 x 9
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.c3(w), 1), 1))


MODELS = {
    "mbv2_block": (MBV2Block, (3, 16, 16)),
    "conv1d": (Conv1DNet, (4, 32)),
}
MODELS["data_ops"] = (DataOpsNet, (3, 12, 12))  # python3 -c "...; build('data_ops')"


def export(model, shape, path):
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros((1,) + shape),), path, opset_version=OPSET,
                          input_names=["input"], output_names=["logits"],
                          do_constant_folding=True, dynamo=False)


def fuse_hardswish(path):
    """onnxruntime's quantizer (quant_pre_process) decomposes HardSwish into
    x * HardSigmoid(x) (alpha 1/6, beta 0.5), quantizing the HardSigmoid output
    on its own. Put the single HardSwish back (DQ -> HardSwish -> Q), as a
    TFLite converter would, so the model is also valid for tflite numerics."""
    m = onnx.load(path)
    g = m.graph
    producers = {o: n for n in g.node for o in n.output}
    users = {}
    for n in g.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    drop = []
    for h in g.node:
        if h.op_type != "HardSigmoid":
            continue
        a = {at.name: onnx.helper.get_attribute_value(at) for at in h.attribute}
        if abs(a.get("alpha", 0.2) - 1 / 6) > 1e-6 or abs(a.get("beta", 0.5) - 0.5) > 1e-6:
            continue
        dq_x = producers[h.input[0]]
        q1 = users[h.output[0]]
        if len(q1) != 1 or q1[0].op_type != "QuantizeLinear":
            continue
        dq1 = users[q1[0].output[0]]
        if len(dq1) != 1 or dq1[0].op_type != "DequantizeLinear":
            continue
        mul = users[dq1[0].output[0]]
        if len(mul) != 1 or mul[0].op_type != "Mul":
            continue
        mul = mul[0]
        other = [i for i in mul.input if i != dq1[0].output[0]][0]
        dq_o = producers.get(other)
        if (dq_o is None or dq_o.op_type != "DequantizeLinear"
                                  or list(dq_o.input) != list(dq_x.input)):
            continue
        h.op_type = "HardSwish"
        del h.attribute[:]
        del h.output[:]
        h.output.append(mul.output[0])
        drop += [q1[0], dq1[0], mul]
        if dq_o is not dq_x and len(users[other]) == 1:
            drop.append(dq_o)
    for n in drop:
        g.node.remove(n)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    onnx.save(m, path)


def fix_output_quantization(path):
    """Sigmoid / Tanh outputs get the fixed quantization TFLite's kernels assume."""
    m = onnx.load(path)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    for n in g.node:
        if n.op_type != "QuantizeLinear":
            continue
        src = producers.get(n.input[0])
        if src is None or src.op_type not in FIXED_OUTPUT_Q:
            continue
        scale, zp = FIXED_OUTPUT_Q[src.op_type]
        users = [u for u in g.node if n.output[0] in u.input]
        for node in [n] + users:
            s_name, z_name = node.input[1], node.input[2]
            inits[s_name].CopyFrom(onnx.numpy_helper.from_array(np.float32(scale), s_name))
            inits[z_name].CopyFrom(onnx.numpy_helper.from_array(np.int8(zp), z_name))
        for dq in users:  # int32 biases of the consumers must stay at s_x * s_w
            for conv in g.node:
                if conv.op_type in ("Conv", "Gemm") and conv.input[0] == dq.output[0] \
                        and len(conv.input) > 2:
                    _requantize_bias(g, inits, producers, conv, np.float32(scale))
    onnx.save(m, path)


def _requantize_bias(g, inits, producers, conv, x_scale):
    w_dq = producers[conv.input[1]]
    b_dq = producers[conv.input[2]]
    w_scale = onnx.numpy_helper.to_array(inits[w_dq.input[1]]).astype(np.float32)
    b_int = onnx.numpy_helper.to_array(inits[b_dq.input[0]]).astype(np.float64)
    b_scale = onnx.numpy_helper.to_array(inits[b_dq.input[1]]).astype(np.float64)
    new_scale = (x_scale * w_scale).astype(np.float32)
    new_int = np.rint(b_int * b_scale / new_scale.astype(np.float64)).astype(np.int32)
    inits[b_dq.input[0]].CopyFrom(onnx.numpy_helper.from_array(new_int, b_dq.input[0]))
    inits[b_dq.input[1]].CopyFrom(onnx.numpy_helper.from_array(new_scale, b_dq.input[1]))


class Decoder(nn.Module):
    """A tiny DCGAN-style upsampler: [1,16,1,1] -> [1,1,16,16], three ConvTranspose."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(16, 8, 4)  # one input pixel: MLAS's M=1 SGEMM path
        self.up2 = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.up3 = nn.ConvTranspose2d(4, 1, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.up3(F.relu(self.up2(F.relu(self.up1(x)))))


MODELS["decoder"] = (Decoder, (16, 1, 1))  # decoder_int8.onnx: ConvTranspose + Relu


class MiscOpsNet(nn.Module):
    """The operators no other regression model has: grouped Conv, HardSigmoid, AveragePool
    (padded, count_include_pad 1 and 0), a requantizing Concat, ReduceMean over
    H, W, a layout-changing Transpose, Reshape, MatMul with a constant weight,
    MatMul of two activations, Softmax."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.grouped = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.c2 = nn.Conv2d(3, 4, 1)
        self.proj = nn.Linear(12, 6, bias=False)        # MatMul, constant weight
        self.fc = nn.Linear(6 * 6 + 12, 5)

    def forward(self, x):
        a = F.relu(self.grouped(F.relu(self.c1(x))))                       # 8 x 8 x 8
        b = F.hardsigmoid(self.c2(x))                                      # 4 x 8 x 8
        p = F.avg_pool2d(a, 3, stride=2, padding=1, count_include_pad=True)   # 8 x 4 x 4
        q = F.avg_pool2d(b, 3, stride=2, padding=1, count_include_pad=False)  # 4 x 4 x 4
        c = torch.cat([p, q], 1)                                           # 12 x 4 x 4
        m = torch.flatten(c.mean((2, 3), keepdim=True), 1)                 # ReduceMean: 12
        # tinyaot's constant-weight MatMul takes a 2-D activation: tokens x channels
        t = c.permute(0, 2, 3, 1).reshape(16, 12)                          # Transpose, Reshape
        h = self.proj(t)                                                   # 16 x 6
        g = torch.matmul(h.t(), h)                                         # 6 x 6
        z = self.fc(torch.cat([g.reshape(1, 36), m], 1))
        return F.softmax(z, dim=-1)


MODELS["misc_ops"] = (MiscOpsNet, (3, 8, 8))  # python3 -c "...; build('misc_ops')"
EXTRA_QUANTIZED_OPS = {"misc_ops": ("HardSigmoid", "ReduceMean")}  # not quantized by default


def build(key, out_dir=HERE, seed=0):
    from make_digits_cnn import to_int8_io

    from codegen.driver.quantize import quantize_qdq

    cls, shape = MODELS[key]
    torch.manual_seed(seed)
    model = cls()
    rng = np.random.default_rng(seed)
    calib = rng.uniform(-1, 1, size=(N_CALIB,) + shape).astype(np.float32)
    int8_path = os.path.join(out_dir, f"{key}_int8.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "f32.onnx")
        qdq = os.path.join(tmp, "qdq.onnx")
        export(model, shape, f32)
        quantize_qdq(f32, calib, qdq, extra_op_types=EXTRA_QUANTIZED_OPS.get(key, ()))
        fuse_hardswish(qdq)
        fix_output_quantization(qdq)
        _, (s_in, z_in, s_out, z_out) = to_int8_io(qdq, int8_path)
    x = rng.uniform(-1, 1, size=(N_GOLDEN, 1) + shape).astype(np.float32)
    q = np.clip(np.rint(x / s_in) + z_in, -128, 127).astype(np.int8)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(int8_path, so, providers=["CPUExecutionProvider"])
    out = np.stack([sess.run(None, {"input": v})[0] for v in q])
    np.savez(os.path.join(out_dir, f"{key}_int8_golden.npz"), inputs=q, outputs=out,
             input_scale=s_in, input_zero_point=z_in, output_scale=s_out, output_zero_point=z_out)
    return int8_path


def main():
    for key in MODELS:
        p = build(key)
        ops = sorted({n.op_type for n in onnx.load(p).graph.node})
        print(f"{os.path.basename(p)}: {', '.join(ops)}")


if __name__ == "__main__":
    main()
