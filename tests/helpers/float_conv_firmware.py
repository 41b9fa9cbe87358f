"""A qemu firmware that runs one float-conv kernel on one case and returns, per output, the
float it had before QuantizeLinear (recorded by TINYAOT_F32_CAPTURE, in the kernel's store
order) and the int8 it wrote: the asm paths of the float-order tests
(tests/numerics/test_ort_conv_float_order.py, test_ort_conv_float_blocks.py)."""
from __future__ import annotations

import numpy as np

from tests.helpers.kernels_cffi import INCLUDE, SRC

_HARNESS = r"""
#include <string.h>
#include "harness.h"
static float *cap_;
#define TINYAOT_F32_CAPTURE(y) (*cap_++ = (y))
#define TINYAOT_F32_CAPTURE_PTR cap_ /* inline-asm loops store y through it */
@INCLUDES@
#include "case_data.h"
const uint32_t tinyaot_harness_num_inputs = 1u;
const uint32_t tinyaot_harness_input_size = IN_SIZE;
const uint32_t tinyaot_harness_output_size = OUT_SIZE * 5u; /* y floats, then the int8 */
static float scratch[SCRATCH / 4 + 1];
static int8_t out8[OUT_SIZE];
static float y[OUT_SIZE];
int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    cap_ = y;
    int rc = @CALL@;
    memcpy(output, y, sizeof(y));
    memcpy(output + sizeof(y), out8, sizeof(out8));
    return rc;
}
"""


def qemu_m4():
    """The qemu-m4 board (the FPv4 asm paths), the toolchain required."""
    from codegen.targets.qemu import load_board
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    return load_board("qemu-m4")


def c_array(ctype, name, a):
    """A static const C array; floats with 10 significant digits (exact for float32)."""
    if ctype == "float":
        vals = ", ".join(f"{np.float32(v).item():.9e}f" for v in np.asarray(a).reshape(-1))
    else:
        vals = ", ".join(str(int(v)) for v in np.asarray(a).reshape(-1))
    return f"static const {ctype} {name}[] = {{ {vals} }};\n"


def case_header(xin_size, out_size, scratch, dims, arrays, fp, plan, extra=""):
    """case_data.h: sizes, the arrays [(ctype, name, values)], and the dims, the
    tinyaot_float_conv_t (`fp`: its initializer's fields) and the plan (`plan`: its
    initializer's fields) as static consts `dims`, `fp`, `plan`."""
    return (f"#define IN_SIZE {xin_size}u\n#define OUT_SIZE {out_size}\n#define SCRATCH {scratch}\n"
            + extra + "".join(c_array(*a) for a in arrays)
            + f"static const tinyaot_conv_dims_t dims = {{ {', '.join(map(str, dims))} }};\n"
            f"static const tinyaot_float_conv_t fp = {{ {', '.join(fp)} }};\n"
            f"static const tinyaot_conv_f32_plan_t plan = {{ {', '.join(map(str, plan))} }};\n")


def run_case(board, case, kernels, call, header, xin, out_size):
    """Build `case`/f.elf with the kernel sources `kernels` (paths under runtime_c/src,
    #included in order) and `call` (the C expression the harness returns), run it on the
    board: (elf, recorded floats, int8 outputs)."""
    from codegen.targets.qemu import build_firmware, run_firmware
    case.mkdir(parents=True, exist_ok=True)
    (case / "case_data.h").write_text(header)
    src = (_HARNESS.replace("@INCLUDES@", "\n".join(f'#include "{k}"' for k in kernels))
           .replace("@CALL@", call))
    (case / "harness_data.c").write_text(
        src + c_array("int8_t", "in_", xin).replace("static const int8_t in_[]",
                                                    "const int8_t tinyaot_harness_inputs[]"))
    elf = build_firmware([board["harness_main"], case / "harness_data.c"], [INCLUDE, SRC, case],
                         board, case / "f.elf",
                         defines=[f"TINYAOT_HARNESS_MAX_OUTPUT={5 * out_size + 64}"])
    res = run_firmware(elf, board, timeout=120)
    got = np.frombuffer(res.outputs[0].data[:4 * out_size], dtype="<f4").copy()
    got8 = np.frombuffer(res.outputs[0].data[4 * out_size:], dtype=np.int8)
    return elf, got, got8
