from .c_emitter import CModule, emit_c
from .harness_data import emit_harness_data

__all__ = ["CModule", "emit_c", "emit_harness_data"]
