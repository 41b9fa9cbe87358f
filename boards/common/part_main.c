/* main() of a build-only part's firmware (boards/<part>/, kind = "part"): one
 * inference and nothing else: no console, no timer. tinyaot never runs it; it
 * links the image that `tinyaot report --board <part>` measures against the
 * part's real flash and RAM: the model, the kernels it calls, the part's
 * startup and what they pull from libc/libgcc. The build names the model:
 *   -DTINYAOT_PART_MODEL=<name> -DTINYAOT_PART_MODEL_UPPER=<NAME>
 *   -DTINYAOT_PART_MODEL_HEADER="<name>.h"
 * With the input and output in the arena (--io-buffers arena, the default)
 * that is all the RAM; with --io-buffers user the two buffers below are the
 * application's and count as its static data. */
#include <stdint.h>

#include TINYAOT_PART_MODEL_HEADER

#define TA_CAT_(a, b) a##b
#define TA_CAT(a, b) TA_CAT_(a, b)
#define MODEL_FN(suffix) TA_CAT(TINYAOT_PART_MODEL, suffix)
#define MODEL_MACRO(suffix) TA_CAT(TINYAOT_PART_MODEL_UPPER, suffix)

#if MODEL_MACRO(_IO_BUFFERS_IN_ARENA)
int main(void)
{
    return MODEL_FN(_invoke)();
}
#else
static int8_t input[MODEL_MACRO(_INPUT_SIZE)];
static int8_t output[MODEL_MACRO(_OUTPUT_SIZE)];

int main(void)
{
    return MODEL_FN(_run)(input, output);
}
#endif
