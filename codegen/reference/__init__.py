"""Numpy oracle: runs the integer IR with the chosen numerics.

Written from the operator specifications (ONNX for `ort`, TFLite's
reference kernels for `tflite`); the C kernels must match it bit for bit.
"""
from .run import run_graph

__all__ = ["run_graph"]
