"""Resize over H, W (nearest: every coordinate_transformation_mode but
tf_crop_and_resize and every nearest_mode; linear: half_pixel, asymmetric,
align_corners, pytorch_half_pixel), scales or sizes, up and down, odd channel
counts, NCHW models stored NHWC inside (after a conv), equal or different
output quantization. `ort`: generated C on the host bit-exact with
onnxruntime. `tflite`: bit-exact with the numpy reference of TFLite's
RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR (int8), plus values worked out by
hand from those kernels' formulas."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save

Q = (0.05, 3)


def host_run(path, x, numerics, tmp_path, kernel):
    return host_run_checked(path, x, numerics, tmp_path, kernel)


def resize_model(shape, mode, ctm, nearest="round_prefer_floor", scales=None, sizes=None,
                 out_q=Q, conv=False, opset=13, relu=False):
    rng = np.random.default_rng(0)
    b = QdqBuilder("resize")
    x = b.dq("x", *Q)
    if conv:
        c = shape[1]
        w, _ = b.weight(rng.normal(size=(c, c, 1, 1)).astype(np.float32) * 0.4)
        x = b.dq(b.q(b.op("Conv", [x, w]), *Q), *Q)
    if sizes is not None:
        ins = [x, "", "", b.const_int(sizes, np.int64)]
        oshape = list(sizes)
    else:
        ins = [x, "", b.const_int(np.asarray(scales, np.float32), np.float32)]
        oshape = [int(np.float32(s) * np.float32(d)) for s, d in zip(scales, shape)]
    y = b.op("Resize", ins, mode=mode, coordinate_transformation_mode=ctm, nearest_mode=nearest)
    if relu:
        y = b.op("Relu", [y])
    b.q(y, *out_q, out="y")
    return b.model("x", shape, "y", oshape, opset=opset)


NEAREST_CTMS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                "tf_half_pixel_for_nn"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
GEOMS = [  # shape, scales, sizes
    ((1, 3, 4, 5), [1, 1, 2, 2], None),
    ((1, 5, 5, 3), [1, 1, 1.5, 2.5], None),
    ((1, 1, 7, 8), None, [1, 1, 4, 3]),       # down, by sizes
    ((1, 7, 3, 4), None, [1, 7, 7, 5]),
]


@pytest.mark.parametrize("ctm", NEAREST_CTMS)
@pytest.mark.parametrize("nearest", NEAREST_MODES)
def test_resize_nearest_ort_bit_exact_with_onnxruntime(ctm, nearest, tmp_path):
    for k, (shape, scales, sizes) in enumerate(GEOMS):
        m = resize_model(shape, "nearest", ctm, nearest, scales, sizes, conv=k % 2 == 1,
                         out_q=Q if k < 2 else (0.07, -9))
        path = save(m, tmp_path, f"m{k}.onnx")
        x = all_int8_inputs(shape, 2, seed=k)
        outs, _ = host_run(path, x, "ort", tmp_path / str(k), "tinyaot_resize_nearest_s8")
        np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


LINEAR_CTMS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
LINEAR_GEOMS = GEOMS + [((1, 3, 6, 9), [1, 1, 0.6, 0.75], None), ((1, 2, 1, 4), None, [1, 2, 3, 1])]


@pytest.mark.parametrize("ctm", LINEAR_CTMS)
def test_resize_bilinear_ort_bit_exact_with_onnxruntime(ctm, tmp_path):
    for k, (shape, scales, sizes) in enumerate(LINEAR_GEOMS):
        for j, out_q in enumerate([Q, (0.031, -7)]):
            m = resize_model(shape, "linear", ctm, scales=scales, sizes=sizes, out_q=out_q,
                             conv=k % 2 == 0, relu=(k == 1 and j == 1))
            path = save(m, tmp_path, f"m{k}{j}.onnx")
            x = all_int8_inputs(shape, 3, seed=k)
            outs, c = host_run(path, x, "ort", tmp_path / f"{k}{j}", "tinyaot_resize_bilinear_s8")
            np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
            assert not [n for n in c.graph.nodes if n.op == "resize"][0].attrs["ort_int8"]


TFLITE_MODES = [  # mode, ctm, nearest_mode: the ONNX forms of TFLite's flags
    ("nearest", "asymmetric", "floor"),
    ("nearest", "tf_half_pixel_for_nn", "floor"),
    ("nearest", "half_pixel", "round_prefer_ceil"),
    ("nearest", "align_corners", "round_prefer_ceil"),
    ("linear", "asymmetric", "floor"),
    ("linear", "half_pixel", "floor"),
    ("linear", "align_corners", "floor"),
    ("linear", "pytorch_half_pixel", "floor"),
]


@pytest.mark.parametrize("mode,ctm,nearest", TFLITE_MODES)
def test_resize_tflite_host_equals_reference(mode, ctm, nearest, tmp_path):
    kernel = "tinyaot_resize_nearest_s8" if mode == "nearest" else "tinyaot_resize_bilinear_s8"
    for k, (shape, scales, sizes) in enumerate(GEOMS):
        m = resize_model(shape, mode, ctm, nearest, scales, sizes, conv=k % 2 == 1,
                         out_q=Q if k != 2 else (0.07, -9))
        path = save(m, tmp_path, f"m{k}.onnx")
        x = all_int8_inputs(shape, 2, seed=k)
        outs, _ = host_run(path, x, "tflite", tmp_path / str(k), kernel)
        if mode == "nearest" and k == 0 and ctm == "asymmetric":  # 2x: each pixel repeated
            np.testing.assert_array_equal(outs, np.repeat(np.repeat(x, 2, axis=3), 2, axis=4))


def test_resize_bilinear_tflite_rounding_by_hand(tmp_path):
    """align_corners, width 2 -> 3: scale_10 = (1024 + 1) / 2 = 512, the middle
    column is (a*2^19 + b*2^19 + sign*2^19) / 2^20: the mean rounded half away
    from zero (TFLite's double-rounding build)."""
    m = resize_model((1, 1, 1, 2), "linear", "align_corners", sizes=[1, 1, 1, 3])
    path = save(m, tmp_path)
    pairs = [(1, 2), (-1, -2), (3, 4), (-3, -4), (0, 1), (0, -1), (127, -128), (-128, -128)]
    x = np.asarray(pairs, np.int8).reshape(len(pairs), 1, 1, 1, 2)
    outs, _ = host_run(path, x, "tflite", tmp_path, "tinyaot_resize_bilinear_s8")
    want = [2, -2, 4, -4, 1, -1, -1, -128]  # (127 - 128) / 2 = -0.5 -> -1
    np.testing.assert_array_equal(outs[:, 0, 0, 0, 1], want)
    np.testing.assert_array_equal(outs[:, 0, 0, 0, [0, 2]], x[:, 0, 0, 0, :])


def test_resize_tflite_requantizes_and_nearest_copies(tmp_path):
    m = resize_model((1, 3, 2, 2), "nearest", "asymmetric", "floor", [1, 1, 2, 2], out_q=(0.1, -4))
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 3, 2, 2), 2)
    outs, c = host_run(path, x, "tflite", tmp_path, "tinyaot_resize_nearest_s8")
    p = [c.params[n.name] for n in c.graph.nodes if n.op == "resize"][0]
    assert p.table is not None
    # TFLite QUANTIZE int8 -> int8: multiplier 0.05 / 0.1 = 0.5 = 2^30 / 2^31, shift 0,
    # through MultiplyByQuantizedMultiplier (its own tests: numerics/test_tflite_fixedpoint.py)
    from codegen.numerics.tflite_fixedpoint import requantize
    v = np.repeat(np.repeat(x, 2, axis=3), 2, axis=4).astype(np.int32) - 3
    np.testing.assert_array_equal(outs, requantize(v, np.int32(1 << 30), np.int32(0), -4, -128, 127))


@pytest.mark.parametrize("case,msg", [
    ("cubic", "mode 'cubic'"),
    ("crop", "tf_crop_and_resize"),
    ("channels", "N or C"),
])
def test_resize_unsupported_variants_name_the_node(case, msg, tmp_path):
    b = QdqBuilder("bad")
    x = b.dq("x", *Q)
    kw = {"mode": "nearest"}
    scales = [1, 1, 2, 2]
    ins = [x, "", None]
    if case == "cubic":
        kw["mode"] = "cubic"
    if case == "crop":
        kw["coordinate_transformation_mode"] = "tf_crop_and_resize"
        ins[1] = b.const_int(np.asarray([0, 0, 0, 0, 1, 1, 1, 1], np.float32), np.float32)
    if case == "channels":
        scales = [1, 2, 2, 2]
    ins[2] = b.const_int(np.asarray(scales, np.float32), np.float32)
    y = b.op("Resize", ins, **kw)
    b.q(y, *Q, out="y")
    g = helper.make_graph(b.nodes, "bad",
                          [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2, 3, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, None)], b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with pytest.raises(TinyAotError) as e:
        compile_model(save(m, tmp_path))
    assert msg in str(e.value) and y in str(e.value) and "Resize" in str(e.value)


@pytest.mark.parametrize("mode,ctm,nearest", [("nearest", "half_pixel", "round_prefer_floor"),
                                              ("nearest", "asymmetric", "ceil")])
def test_resize_tflite_without_equivalent_is_a_clear_error(mode, ctm, nearest, tmp_path):
    m = resize_model((1, 3, 4, 4), mode, ctm, nearest, [1, 1, 2, 2])
    path = save(m, tmp_path)
    with pytest.raises(TinyAotError, match="no TFLite RESIZE_NEAREST_NEIGHBOR equivalent") as e:
        compile_model(path, numerics="tflite")
    assert "resize" in str(e.value)
    compile_model(path, numerics="ort")  # fine in ort numerics


@pytest.mark.parametrize("ctm", NEAREST_CTMS)
def test_resize_nearest_index_tables_equal_onnxruntime(ctm, tmp_path):
    """The source row of every output row, read back from onnxruntime (input
    row r holds the value r), for geometries whose coordinates land within a
    few float32 ulps of k + 0.5 (ORT takes those as ties) or of an integer, and
    scale 1 (ORT maps the axis one to one)."""
    from codegen.numerics.resize import ort_nearest_axis
    geoms = [(7, 2, None), (7, 4, None), (7, 8, None), (10, 6, None), (7, 1, None), (2, 2, None),
             (3, 3, None), (9, 5, 0.6), (6, 2, float(np.float32(1 / 2.499999))), (5, 12, 2.5),
             (4, 3, None), (8, 20, 2.5), (6, 4, 0.75)]
    for nm in NEAREST_MODES:
        for k, (n_in, n_out, scale) in enumerate(geoms):
            if scale is None:
                m = resize_model((1, 1, n_in, 1), "nearest", ctm, nm, sizes=[1, 1, n_out, 1])
                scale = float(np.float32(n_out) / np.float32(n_in))
            else:
                m = resize_model((1, 1, n_in, 1), "nearest", ctm, nm, scales=[1, 1, scale, 1])
                n_out = int(np.float32(scale) * np.float32(n_in))
            path = save(m, tmp_path, f"{nm}{k}.onnx")
            x = np.arange(n_in, dtype=np.int8).reshape(1, 1, 1, n_in, 1)
            got = run_ort(path, x)[0, 0, 0, :, 0].astype(np.int32)  # the value is the source row
            np.testing.assert_array_equal(ort_nearest_axis(ctm, nm, scale, n_in, n_out), got,
                                          err_msg=f"{nm} {n_in} -> {n_out} scale {scale}")


def test_resize_opset18_axes_bit_exact(tmp_path):
    """opset 18: scales given for `axes` [2, 3] only."""
    b = QdqBuilder("axes")
    x = b.dq("x", *Q)
    sc = b.const_int(np.asarray([1.5, 2.0], np.float32), np.float32)
    y = b.op("Resize", [x, "", sc], mode="linear", axes=[2, 3],
             coordinate_transformation_mode="half_pixel")
    b.q(y, *Q, out="y")
    m = b.model("x", (1, 3, 4, 3), "y", (1, 3, 6, 6), opset=18)
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 3, 4, 3), 3)
    outs, _ = host_run(path, x, "ort", tmp_path, "tinyaot_resize_bilinear_s8")
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
