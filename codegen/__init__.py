"""tinyaot: ahead-of-time compiler from quantized ONNX to static-arena C."""

__version__ = "0.1.0"
