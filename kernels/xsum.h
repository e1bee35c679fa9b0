/* An exact sum of doubles (a long accumulator): the value of a sum does not
 * depend on the order of its terms, so it is the same bits for any thread
 * count and any split of the grid over ranks. Each finite term m 2^e
 * (|m| < 2^53) is added to 32-bit digits held in 64-bit limbs, which
 * normalise() carries; partial sums merge limb by limb, across ranks too:
 * normalised limbs are integers below 2^32, which a sum of doubles adds
 * exactly in any order (heat_xsum_limbs_* below). Private to kernels/.
 * (The idea of the long accumulator: Kulisch and Miranker, "Computer
 * Arithmetic in Theory and Practice", 1981; Neal, "Fast exact summation
 * using small and large superaccumulators", arXiv:1505.05571, 2015.) */
#ifndef HEAT_XSUM_H
#define HEAT_XSUM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Digits of 32 bits from 2^-HEAT_XSUM_LOW up: the unit of the smallest
 * subnormal (2^-1074 = 2^-1073 x 2^-53... its m's unit 2^-1126) to the
 * largest double times 2^32 terms. */
#define HEAT_XSUM_LOW   1152
#define HEAT_XSUM_LIMBS 72

typedef struct heat_xsum {
    int64_t d[HEAT_XSUM_LIMBS];
    int64_t adds;  /* terms since the last normalise() */
    int nonfinite; /* a NaN or an infinity was added: the sum is NaN */
} heat_xsum;

static inline void heat_xsum_zero(heat_xsum *s)
{
    memset(s, 0, sizeof *s);
}

/* Carries every limb but the last into [0, 2^32): the unique form of the
 * value (the last limb holds its sign). */
static inline void heat_xsum_normalise(heat_xsum *s)
{
    for (int i = 0; i < HEAT_XSUM_LIMBS - 1; i++) {
        const int64_t c = s->d[i] >> 32; /* floor(d / 2^32): arithmetic shift */
        s->d[i] -= c * ((int64_t)1 << 32);
        s->d[i + 1] += c;
    }
    s->adds = 0;
}

static inline void heat_xsum_add(heat_xsum *s, double v)
{
    if (v == 0) return;
    if (!isfinite(v)) {
        s->nonfinite = 1;
        return;
    }
    int e;
    const double f = frexp(v, &e);           /* v = f 2^e, 0.5 <= |f| < 1 */
    const int64_t m = (int64_t)ldexp(f, 53); /* exact: |m| < 2^53 */
    const int at = e - 53 + HEAT_XSUM_LOW;   /* the bit of m's unit, >= 0 */
    const int limb = at / 32, bit = at % 32;
    const int64_t sg = m < 0 ? -1 : 1;
    /* |m| 2^bit < 2^85: three digits */
    const unsigned __int128 t = (unsigned __int128)(uint64_t)(m < 0 ? -m : m) << bit;
    s->d[limb] += sg * (int64_t)(uint32_t)t;
    s->d[limb + 1] += sg * (int64_t)(uint32_t)(t >> 32);
    s->d[limb + 2] += sg * (int64_t)(uint32_t)(t >> 64);
    if (++s->adds >= ((int64_t)1 << 30)) heat_xsum_normalise(s);
}

/* s += t (both any form). */
static inline void heat_xsum_merge(heat_xsum *s, const heat_xsum *t)
{
    heat_xsum_normalise(s);
    heat_xsum copy = *t;
    heat_xsum_normalise(&copy);
    for (int i = 0; i < HEAT_XSUM_LIMBS; i++) s->d[i] += copy.d[i];
    s->nonfinite |= copy.nonfinite;
    heat_xsum_normalise(s);
}

/* The sum as a double: a function of the exact value alone (its digits from
 * the top, in double; within an ulp or two). */
static inline double heat_xsum_value(const heat_xsum *s)
{
    if (s->nonfinite) return NAN;
    heat_xsum t = *s;
    heat_xsum_normalise(&t);
    const int neg = t.d[HEAT_XSUM_LIMBS - 1] < 0;
    if (neg) { /* the magnitude: negate and carry again */
        for (int i = 0; i < HEAT_XSUM_LIMBS; i++) t.d[i] = -t.d[i];
        heat_xsum_normalise(&t);
    }
    double r = 0;
    for (int i = HEAT_XSUM_LIMBS - 1; i >= 0; i--)
        if (t.d[i]) r += ldexp((double)t.d[i], 32 * i - HEAT_XSUM_LOW);
    return neg ? -r : r;
}

/* Across ranks: the normalised limbs as doubles (exact integers below 2^32;
 * the last may be negative), to be summed by an all-reduce of doubles,
 * which is exact for fewer than 2^20 ranks; and back. */
static inline void heat_xsum_limbs_out(const heat_xsum *s, double *v)
{
    heat_xsum t = *s;
    heat_xsum_normalise(&t);
    for (int i = 0; i < HEAT_XSUM_LIMBS; i++) v[i] = (double)t.d[i];
    v[HEAT_XSUM_LIMBS] = t.nonfinite;
}

static inline void heat_xsum_limbs_in(heat_xsum *s, const double *v)
{
    for (int i = 0; i < HEAT_XSUM_LIMBS; i++) s->d[i] = (int64_t)v[i];
    s->adds = 0;
    s->nonfinite = v[HEAT_XSUM_LIMBS] != 0;
    heat_xsum_normalise(s);
}

#endif
