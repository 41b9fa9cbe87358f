"""Model file -> integer IR: ONNX (onnx_loader.py) or TFLite (tflite/), by the extension."""
from .onnx_loader import load_model as load_onnx
from .tflite import is_tflite


def load_model(path, input_shapes=None, float_fallback=True):
    """A .onnx or .tflite file (by its extension) -> the integer IR graph (float_fallback:
    an ONNX node no integer lowering takes runs in float32, frontend/float_fallback.py; a
    .tflite's float region, frontend/tflite/lower.py)."""
    if is_tflite(path):
        from .tflite import load_tflite
        return load_tflite(path, input_shapes, float_fallback)
    return load_onnx(path, input_shapes, float_fallback)


__all__ = ["load_model", "is_tflite"]
