"""The arithmetic: TFLite fixed point, onnxruntime's float orders and requantization, the oracle."""
