"""Model file -> integer IR: ONNX (onnx_loader.py) or TFLite (tflite/), by the extension."""
from .onnx_loader import load_model as load_onnx
from .tflite import is_tflite


def load_model(path, input_shapes=None):
    """A .onnx or .tflite file (by its extension) -> the integer IR graph."""
    if is_tflite(path):
        from .tflite import load_tflite
        return load_tflite(path, input_shapes)
    return load_onnx(path, input_shapes)


__all__ = ["load_model", "is_tflite"]
