"""What the commands do, on top of the compiler (codegen/compiler.py).

Arrows point down only (tests/architecture/test_import_graph.py checks it, imports inside
functions included):

    codegen/cli.py                 argument parsing, exit codes
      codegen/commands/            one module per subcommand (the table in __init__)
        codegen/driver/            these services:
          fleet, bench, export     many boards / models / a library folder
          verify, validate,        run a compiled model: against golden outputs,
          profile, report          layer by layer, per-layer instructions, memory
          firmware                 the one builder (SCons) of every firmware and host library
          stack, linkmap, budget   what a linked image needs: stack, flash, RAM
          signing, quantize,       a signed manifest; float -> int8 models;
          console, ort_taps        terminal output; onnxruntime's own tensors
            codegen/compiler.py    model -> C
"""
