/*
 * srv_float_text.h - the shortest decimal text that reads back as the same
 * float, for the numbers of JSON replies.
 *
 * The text is what "%.6g" .. "%.9g" would print for the first precision
 * whose text strtof reads back as v (9 digits always do), so the reply of
 * every output is both short and exact. The digits come from exact 128-bit
 * integer arithmetic instead of printf and strtof, several times faster;
 * floats whose scaling would not fit 128 bits (below about 1e-19 or above
 * about 1e19) take the printf route.
 */
#ifndef SRV_FLOAT_TEXT_H
#define SRV_FLOAT_TEXT_H

#include <stddef.h>

enum { SRV_FLOAT_TEXT_MAX = 32 };

/* Writes v (finite) to out[SRV_FLOAT_TEXT_MAX] with a closing NUL; returns
 * the length. */
int srv_float_text(char *out, float v);

/* The printf route alone: the oracle for tests. */
int srv_float_text_printf(char *out, float v);

#endif /* SRV_FLOAT_TEXT_H */
