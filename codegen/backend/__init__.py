from .c_emitter import CModule, emit_c, emit_harness_data

__all__ = ["CModule", "emit_c", "emit_harness_data"]
