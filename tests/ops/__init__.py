"""One file per operator: ONNX recognition, numerics against onnxruntime / TFLite Micro, host C."""
