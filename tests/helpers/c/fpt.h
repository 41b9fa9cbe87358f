/* tests/c/fixedpoint_target.c */
#ifndef FPT_H
#define FPT_H
#define FPT_N 300
int fpt_run(const void *input, void *output);
#endif
