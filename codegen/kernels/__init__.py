"""The Python side of the runtime_c kernels: how weights, requantization records and float
orders are laid out for them, their scratch sizes, and the C text of constants.

Operator modules (codegen/ops/) and the emitter (codegen/backend/) use these; nothing here
imports from the compiler's stages.
"""
