"""Where the model's input and output live: `--io-buffers arena` (default) or `user`.

`arena` (the default, smallest total RAM): the input and output are planned
like every other block, so the input's bytes are reused once it is dead and
the output sits in bytes that are free at the end; the application needs no
buffers of its own. It writes the input to `<name>_input()`, calls
`<name>_invoke()` and reads `<name>_output()`. `<name>_run(input, output)`
stays available (it copies in and out; NULL skips a copy).

`user`: the caller passes its own input/output buffers to `<name>_run` and the
arena holds only intermediate tensors; the smallest arena when the
application keeps those buffers anyway (a sensor/DMA buffer in, a result
buffer out).
"""
from __future__ import annotations


def io_blocks(g, plan):
    return plan.where[g.inputs[0]], plan.where[g.outputs[0]]


def float_output(g) -> bool:
    """A float32 model output (the float fallback computes the last layer in float)."""
    return g.tensors[g.outputs[0]].dtype == "float32"


def header_api(g, plan, name, up):
    """The header lines declaring the API, by I/O mode."""
    if float_output(g):
        return _float_header_api(g, plan, name, up)
    if plan.io_buffers != "arena":
        return (f"/* I/O buffers: user (--io-buffers user). The input and output are the\n"
                f" * caller's buffers, passed to {name}_run; the arena holds only intermediate\n"
                f" * tensors. */\n"
                f"#define {up}_IO_BUFFERS_IN_ARENA 0\n\n"
                f"/* Runs one inference: reads {up}_INPUT_SIZE bytes from input, writes\n"
                f" * {up}_OUTPUT_SIZE bytes to output. Returns 0 on success. Not reentrant\n"
                f" * (one static arena). */\n"
                f"int {name}_run(const int8_t *input, int8_t *output);\n")
    bi, bo = io_blocks(g, plan)
    return (f"/* I/O buffers: arena (the default). The input is at arena offset {bi.offset} and\n"
            f" * the output at arena offset {bo.offset}, inside {up}_ARENA_SIZE: the caller needs no\n"
            f" * buffers of its own. Use:\n"
            f" *     int8_t *in = {name}_input();      write {up}_INPUT_SIZE bytes here\n"
            f" *     {name}_invoke();                  one inference (overwrites the input)\n"
            f" *     const int8_t *out = {name}_output();   read {up}_OUTPUT_SIZE bytes here\n"
            f" * (--io-buffers user keeps them in the caller's buffers instead, passed to\n"
            f" * {name}_run). */\n"
            f"#define {up}_IO_BUFFERS_IN_ARENA 1\n\n"
            f"/* Where to write the {up}_INPUT_SIZE input bytes before {name}_invoke(). */\n"
            f"int8_t *{name}_input(void);\n"
            f"/* Where the {up}_OUTPUT_SIZE output bytes are after {name}_invoke(); valid\n"
            f" * until the next {name}_input() write. */\n"
            f"const int8_t *{name}_output(void);\n"
            f"/* Runs one inference on the arena-resident input. Returns 0 on success. Not\n"
            f" * reentrant (one static arena). */\n"
            f"int {name}_invoke(void);\n"
            f"/* Copies input (if not NULL) in, invokes, copies the output out (if not NULL). */\n"
            f"int {name}_run(const int8_t *input, int8_t *output);\n")


def _float_header_api(g, plan, name, up):
    """header_api for a float32 output: <name>_output() / <name>_run give floats."""
    if plan.io_buffers != "arena":
        return (f"/* I/O buffers: user (--io-buffers user). The input and output are the\n"
                f" * caller's buffers, passed to {name}_run; the arena holds only intermediate\n"
                f" * tensors. */\n"
                f"#define {up}_IO_BUFFERS_IN_ARENA 0\n\n"
                f"/* Runs one inference: reads {up}_INPUT_SIZE bytes from input, writes\n"
                f" * {up}_OUTPUT_SIZE floats ({up}_OUTPUT_BYTES bytes) to output. Returns 0 on\n"
                f" * success. Not reentrant (one static arena). */\n"
                f"int {name}_run(const int8_t *input, float *output);\n")
    bi, bo = io_blocks(g, plan)
    return (f"/* I/O buffers: arena (the default). The input is at arena offset {bi.offset} and\n"
            f" * the output at arena offset {bo.offset}, inside {up}_ARENA_SIZE: the caller needs no\n"
            f" * buffers of its own. Use:\n"
            f" *     int8_t *in = {name}_input();      write {up}_INPUT_SIZE bytes here\n"
            f" *     {name}_invoke();                  one inference (overwrites the input)\n"
            f" *     const float *out = {name}_output();   read {up}_OUTPUT_SIZE floats here\n"
            f" * (--io-buffers user keeps them in the caller's buffers instead, passed to\n"
            f" * {name}_run). */\n"
            f"#define {up}_IO_BUFFERS_IN_ARENA 1\n\n"
            f"/* Where to write the {up}_INPUT_SIZE input bytes before {name}_invoke(). */\n"
            f"int8_t *{name}_input(void);\n"
            f"/* Where the {up}_OUTPUT_SIZE output floats are after {name}_invoke(); valid\n"
            f" * until the next {name}_input() write. */\n"
            f"const float *{name}_output(void);\n"
            f"/* Runs one inference on the arena-resident input. Returns 0 on success. Not\n"
            f" * reentrant (one static arena). */\n"
            f"int {name}_invoke(void);\n"
            f"/* Copies input (if not NULL) in, invokes, copies the output out (if not NULL). */\n"
            f"int {name}_run(const int8_t *input, float *output);\n")


def run_functions(g, plan, name, up, body, prologue):
    """The C definitions: <name>_run (user) or _input/_output/_invoke/_run (arena)."""
    if float_output(g):
        return _float_run_functions(g, plan, name, up, body, prologue)
    if plan.io_buffers != "arena":
        copy = []
        if plan.where[g.outputs[0]] is plan.where[g.inputs[0]]:
            # The output is a zero-copy view of the input (reshape, Q(DQ(x)) with
            # equal params): no kernel writes it, so its bytes are copied, and the
            # layers reading the shared block read them from output.
            copy = [f"    __builtin_memmove(output, input, {up}_INPUT_SIZE);"]
        return ([f"int {name}_run(const int8_t *input, int8_t *output)\n{{",
                 "    (void)input;\n    (void)output;"] + copy + prologue + body
                + ["    return 0;\n}\n"])
    bi, bo = io_blocks(g, plan)
    return ([f"int8_t *{name}_input(void)\n{{\n    return ARENA + {bi.offset};\n}}\n",
             f"const int8_t *{name}_output(void)\n{{\n    return ARENA + {bo.offset};\n}}\n",
             f"int {name}_invoke(void)\n{{"] + prologue + body + ["    return 0;\n}\n",
            f"int {name}_run(const int8_t *input, int8_t *output)\n{{\n"
            f"    if (input != NULL) __builtin_memcpy(ARENA + {bi.offset}, input, {up}_INPUT_SIZE);\n"
            f"    if ({name}_invoke() != 0) return -1;\n"
            f"    if (output != NULL) __builtin_memcpy(output, ARENA + {bo.offset}, {up}_OUTPUT_SIZE);\n"
            f"    return 0;\n}}\n"])


def _float_run_functions(g, plan, name, up, body, prologue):
    """run_functions for a float32 output (a float layer always writes it: no copy case)."""
    if plan.io_buffers != "arena":
        return ([f"int {name}_run(const int8_t *input, float *output)\n{{",
                 "    (void)input;\n    (void)output;"] + prologue + body
                + ["    return 0;\n}\n"])
    bi, bo = io_blocks(g, plan)
    return ([f"int8_t *{name}_input(void)\n{{\n    return ARENA + {bi.offset};\n}}\n",
             f"const float *{name}_output(void)\n{{\n"
             f"    return (const float *)(const void *)(ARENA + {bo.offset});\n}}\n",
             f"int {name}_invoke(void)\n{{"] + prologue + body + ["    return 0;\n}\n",
            f"int {name}_run(const int8_t *input, float *output)\n{{\n"
            f"    if (input != NULL) __builtin_memcpy(ARENA + {bi.offset}, input, {up}_INPUT_SIZE);\n"
            f"    if ({name}_invoke() != 0) return -1;\n"
            f"    if (output != NULL) __builtin_memcpy(output, ARENA + {bo.offset}, {up}_OUTPUT_BYTES);\n"
            f"    return 0;\n}}\n"])
