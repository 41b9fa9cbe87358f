/* Your application: classify one 8x8 digit with the exported model library. */
#include <stdint.h>
#include "digits_cnn_int8.h"  /* from the exported folder's include/ */
#include "semihost.h"         /* your board's console; here QEMU semihosting */
#include "digit.h"            /* one test digit: digit[64] (int8) and its label */

int main(void)
{
    int8_t *in = digits_cnn_int8_input();           /* the input lives in the arena */
    for (uint32_t i = 0; i < DIGITS_CNN_INT8_INPUT_SIZE; i++) in[i] = digit[i];
    if (digits_cnn_int8_invoke() != 0) return 1;    /* one inference */
    const int8_t *out = digits_cnn_int8_output();   /* 10 int8 logits */
    uint32_t best = 0;
    for (uint32_t k = 1; k < DIGITS_CNN_INT8_OUTPUT_SIZE; k++)
        if (out[k] > out[best]) best = k;
    tinyaot_sh_puts("predicted ");
    tinyaot_sh_put_u32(best);
    tinyaot_sh_puts(", label ");
    tinyaot_sh_put_u32(label);
    tinyaot_sh_putc('\n');
    return 0;
}
