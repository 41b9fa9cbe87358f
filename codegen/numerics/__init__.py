"""The arithmetic each numerics target prescribes, shared by the compiler and the oracle.

- tflite_fixedpoint: TFLite Micro's integer arithmetic (QuantizeMultiplier, the doubling high
  multiply, rounding shifts, per-operator parameter derivations).
- ort_float: onnxruntime's float32 steps (DequantizeLinear, QuantizeLinear, fma, float weights).
- mlas_fc_order, mlas_conv_order: the order in which MLAS sums a float Gemm / Conv.
- ort_qlinear_add: MLAS QLinearAdd's fixed-point form.
- lut_tables: 256-entry tables of elementwise nonlinearities per numerics.
- resize: index and weight tables of Resize per numerics.
- quant: quantization ranges, rounding and activation clamps common to every operator.

The compiler (ops/, backend/) and the numpy oracle both import from here; nothing here imports
from the compiler's stages.
"""

NUMERICS = ("ort", "tflite")  # the bit-exact targets: onnxruntime, TFLite Micro
