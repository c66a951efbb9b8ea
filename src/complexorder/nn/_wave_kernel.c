/* Native CPU kernel of paper Eq. 5 for float32: out[i, d] = r[t_i, d] * exp(i (w[t_i, d] * pos_i + theta[t_i, d])).
 *
 * Called through ctypes from complexorder/nn/native.py (no torch headers, no Python objects:
 * raw pointers to contiguous float32 / int64 buffers). It exists for speed only; the plain
 * autograd path in complexorder/nn/wave.py is the reference the tests hold it to.
 *
 * Per token row the kernel gathers the table rows once, computes the phase exactly as the
 * reference does (w * pos, then + theta: two float32 roundings, no fused multiply-add), and its
 * sine and cosine with a vectorisable Cody-Waite reduction and minimax polynomials: absolute
 * error below 1e-7 (about 1.5 ulp of 1; torch.sin/torch.cos: 4e-8), so relative error can be large
 * only where sin or cos is itself near 0. The reduction runs in float for |phase| <= 8192 rad, in
 * double up to 8e8 rad, and libm's sinf/cosf take the rest (and inf, nan), chosen per element. The backward recomputes the phasor instead of saving it
 * (less memory, fewer passes) and either accumulates dense [V, D] gradient tables (as
 * nn.Embedding's, but zero-filling only the rows no token touched) or writes one gradient row per
 * token (for sparse gradients).
 *
 * Every function works on the columns [col0, col1) only, so that callers may split the columns
 * over threads without two threads ever writing the same element.
 *
 * Build: compiled by setup.py with -O3 (optional: without a C compiler the package falls back to
 * its PyTorch path). On x86-64 Linux with GCC the functions are cloned for x86-64-v4 (AVX-512),
 * x86-64-v3 (AVX2, FMA) and the baseline, and the loader picks one for the CPU (target_clones),
 * so the same binary runs on any x86-64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) && defined(__linux__)
#define CO_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CO_CLONES
#endif

#define CO_MAX_CHUNK 1024 /* columns per inner block (stack buffers) */

/* pi/2 in three parts for the float reduction (cephes' DP1..DP3 times 2): k * PIO2F_1 and k * PIO2F_2
 * are exact in float for |k| < 2^13, so the reduction is accurate for |x| <= FLOAT_LIMIT. */
static const float PIO2F_1 = 1.5703125f;
static const float PIO2F_2 = 4.837512969970703125e-4f;
static const float PIO2F_3 = 7.54978995489188216e-8f;
static const float TWO_OVER_PI_F = 6.36619772367581382433e-01f;
static const float ROUND_MAGIC_F = 12582912.0f; /* 1.5 * 2^23: x + M - M rounds |x| < 2^22 to an integer */
static const float FLOAT_LIMIT = 8192.0f;
/* pi/2 in three 24-bit parts for the double reduction: k * PIO2_1 and k * PIO2_2 are exact for |k| < 2^29. */
static const double PIO2_1 = 1.57079625129699707031e+00;
static const double PIO2_2 = 7.54978941586159635335e-08;
static const double PIO2_3 = 5.39030252995776476554e-15;
static const double TWO_OVER_PI = 6.36619772367581382433e-01;
static const double ROUND_MAGIC = 6755399441055744.0; /* 1.5 * 2^52 */
static const float DOUBLE_LIMIT = 8.0e8f;             /* beyond it (and for inf/nan): libm */

static inline float co_flip(float v, uint32_t sign) { /* v with its sign bit xor-ed with sign's */
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits ^= sign;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* sin and cos of y in [-pi/4, pi/4] rotated by the quadrant q (k mod 4), branch-free. */
static inline void co_quadrant(float y, uint32_t q, float *s_out, float *c_out) {
    float z = y * y;
    /* cephes sinf/cosf minimax polynomials on [-pi/4, pi/4] */
    float s = y + y * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
    float c = 1.0f - 0.5f * z + z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
    s = (y == 0.0f) ? y : s; /* sin(-0) = -0 (y + y z p would give +0) */
    *s_out = co_flip((q & 1) ? c : s, (q & 2) << 30);       /* quadrants 2, 3: -sin */
    *c_out = co_flip((q & 1) ? s : c, ((q + 1) & 2) << 30); /* quadrants 1, 2: -cos */
}

/* |x| <= FLOAT_LIMIT: Cody-Waite reduction in float (16 lanes with AVX-512). The quadrant is read
 * from the low bits of the magic-rounded value (M + k, M a multiple of 4), not by converting k to
 * an int, which would be undefined for the nan and huge values this pass also sees (their results
 * are replaced below). */
static inline void co_sincos_small(float x, float *s, float *c) {
    float rounded = x * TWO_OVER_PI_F + ROUND_MAGIC_F;
    float k = rounded - ROUND_MAGIC_F;
    float y = ((x - k * PIO2F_1) - k * PIO2F_2) - k * PIO2F_3;
    uint32_t bits;
    memcpy(&bits, &rounded, sizeof bits);
    co_quadrant(y, bits & 3, s, c);
}

/* |x| <= DOUBLE_LIMIT: the same reduction in double. */
static inline void co_sincos_large(float x, float *s, float *c) {
    double xd = (double)x;
    double rounded = xd * TWO_OVER_PI + ROUND_MAGIC;
    double kd = rounded - ROUND_MAGIC;
    double yd = ((xd - kd * PIO2_1) - kd * PIO2_2) - kd * PIO2_3;
    uint64_t bits;
    memcpy(&bits, &rounded, sizeof bits);
    co_quadrant((float)yd, (uint32_t)(bits & 3), s, c);
}

/* phase, sin and cos of columns [0, m) of one row. Each element takes the float reduction if its
 * |phase| <= FLOAT_LIMIT (all of them at the usual frequencies and lengths), else the double
 * reduction up to DOUBLE_LIMIT, else libm (and for inf, nan): the choice is per element, so a
 * result never depends on its neighbours or on how the columns are split over threads. */
static inline void co_row_phasor(int64_t m, const float *w, float p, const float *th,
                                 float *ph, float *s, float *c) {
    /* Two loops through the buffer ph: w * p and + theta are rounded separately, as in the
     * reference (GCC contracts a * b + c into one fused multiply-add only within an expression's
     * SSA chain, never through a store and a load in another loop; a test checks it). */
    if (w) {
        for (int64_t j = 0; j < m; ++j) ph[j] = w[j] * p;
        if (th) {
            for (int64_t j = 0; j < m; ++j) ph[j] = ph[j] + th[j];
        }
    } else { /* no frequency table: the phase is theta alone (complex-vanilla) */
        for (int64_t j = 0; j < m; ++j) ph[j] = th[j];
    }
    int beyond = 0; /* any |phase| > FLOAT_LIMIT, or nan */
    for (int64_t j = 0; j < m; ++j) {
        co_sincos_small(ph[j], &s[j], &c[j]);
        beyond |= !(fabsf(ph[j]) <= FLOAT_LIMIT);
    }
    if (!beyond) return;
    beyond = 0;
    for (int64_t j = 0; j < m; ++j) {
        float sl, cl;
        const int large = !(fabsf(ph[j]) <= FLOAT_LIMIT);
        co_sincos_large(ph[j], &sl, &cl);
        s[j] = large ? sl : s[j];
        c[j] = large ? cl : c[j];
        beyond |= !(fabsf(ph[j]) <= DOUBLE_LIMIT);
    }
    if (!beyond) return;
    for (int64_t j = 0; j < m; ++j) {
        if (!(fabsf(ph[j]) <= DOUBLE_LIMIT)) {
            s[j] = sinf(ph[j]);
            c[j] = cosf(ph[j]);
        }
    }
}

/* Ask for the [col0, col1) part of a table row ahead of its use (rows are random in a [V, D] table,
 * so the hardware prefetcher cannot know the next one). */
static inline void co_prefetch(const float *row, int64_t col0, int64_t col1, int write) {
    if (!row) return;
    for (int64_t j = col0; j < col1; j += 16) {
        if (write) __builtin_prefetch(row + j, 1, 3);
        else __builtin_prefetch(row + j, 0, 3);
    }
}

static int co_check_tokens(int64_t n, const int64_t *tokens, int64_t vocab) {
    for (int64_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= vocab) return -1;
    }
    return 0;
}

/* out: [n, dim, 2] interleaved (re, im). Padding rows (tokens[i] == padding_idx, -1 for none) are zero.
 * pos: [n] (NULL: all 0). amp: [vocab, dim]; freq, theta: [vocab, dim] or NULL, not both (freq NULL:
 * the phase is theta, complex-vanilla). Returns -1 on a token outside [0, vocab) (nothing written), else 0. */
CO_CLONES
int co_wave_forward(int64_t n, int64_t dim, int64_t vocab, const int64_t *tokens, const float *pos,
                    const float *amp, const float *freq, const float *theta, int64_t padding_idx,
                    float *out, int64_t col0, int64_t col1) {
    float ph[CO_MAX_CHUNK], s[CO_MAX_CHUNK], c[CO_MAX_CHUNK];
    if (co_check_tokens(n, tokens, vocab)) return -1;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = tokens[i];
        float *o = out + 2 * (i * dim);
        if (t == padding_idx) {
            memset(o + 2 * col0, 0, sizeof(float) * 2 * (size_t)(col1 - col0));
            continue;
        }
        if (i + 1 < n) {
            const int64_t u = tokens[i + 1];
            co_prefetch(amp + u * dim, col0, col1, 0);
            co_prefetch(freq ? freq + u * dim : NULL, col0, col1, 0);
            co_prefetch(theta ? theta + u * dim : NULL, col0, col1, 0);
        }
        const float p = pos ? pos[i] : 0.0f;
        const float *a = amp + t * dim, *w = freq ? freq + t * dim : NULL, *th = theta ? theta + t * dim : NULL;
        for (int64_t j0 = col0; j0 < col1; j0 += CO_MAX_CHUNK) {
            const int64_t m = (col1 - j0 < CO_MAX_CHUNK) ? col1 - j0 : CO_MAX_CHUNK;
            co_row_phasor(m, w ? w + j0 : NULL, p, th ? th + j0 : NULL, ph, s, c);
            const float *aj = a + j0;
            float *oj = o + 2 * j0;
            for (int64_t j = 0; j < m; ++j) {
                oj[2 * j] = aj[j] * c[j];
                oj[2 * j + 1] = aj[j] * s[j];
            }
        }
    }
    return 0;
}

/* dst[j] (+)= v[j]: the first visit of a row writes, later ones add. */
static inline void co_store(float *dst, const float *v, int64_t m, int write) {
    if (write) {
        for (int64_t j = 0; j < m; ++j) dst[j] = v[j];
    } else {
        for (int64_t j = 0; j < m; ++j) dst[j] += v[j];
    }
}

/* grad: [n, dim, 2] interleaved gradient of the output. Gradients of amp / freq / theta go to
 * g_amp / g_freq / g_theta (each may be NULL = not needed; their contents on entry are ignored):
 *   rows == 0: dense [vocab, dim] tables, the sum over the tokens of each word; rows no token
 *              touched (the padding word among them) are zero. A row is written at its word's
 *              first token and added to at the next ones, and only the untouched rows are
 *              zero-filled at the end: no [vocab, dim] fill followed by read-modify-writes.
 *   rows != 0: one [n, dim] row per token (padding rows 0), for sparse gradients.
 * dL/dr = g_re cos + g_im sin;  dL/dphase = r (g_im cos - g_re sin);  dL/dw = pos dL/dphase.
 * Returns -1 on a token outside [0, vocab), -2 if memory for the word map is short, else 0. */
CO_CLONES
int co_wave_backward(int64_t n, int64_t dim, int64_t vocab, const int64_t *tokens, const float *pos,
                     const float *amp, const float *freq, const float *theta, int64_t padding_idx,
                     const float *grad, float *g_amp, float *g_freq, float *g_theta, int rows,
                     int64_t col0, int64_t col1) {
    float ph[CO_MAX_CHUNK], s[CO_MAX_CHUNK], c[CO_MAX_CHUNK], v[CO_MAX_CHUNK];
    float *const tables[3] = {g_amp, g_freq, g_theta};
    unsigned char *seen = NULL; /* dense: which words have been written */
    if (co_check_tokens(n, tokens, vocab)) return -1;
    if (!rows) {
        seen = (unsigned char *)calloc(vocab > 0 ? (size_t)vocab : 1, 1);
        if (!seen) return -2;
    }
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = tokens[i];
        const int64_t row = rows ? i : t;
        if (t == padding_idx) {
            if (rows) {
                for (int k = 0; k < 3; ++k) {
                    if (tables[k]) memset(tables[k] + row * dim + col0, 0, sizeof(float) * (size_t)(col1 - col0));
                }
            }
            continue;
        }
        const int write = rows || !seen[t];
        if (!rows) seen[t] = 1;
        if (i + 1 < n) {
            const int64_t u = tokens[i + 1];
            co_prefetch(amp + u * dim, col0, col1, 0);
            co_prefetch(freq ? freq + u * dim : NULL, col0, col1, 0);
            co_prefetch(theta ? theta + u * dim : NULL, col0, col1, 0);
            if (!rows && u != padding_idx) {
                for (int k = 0; k < 3; ++k) co_prefetch(tables[k] ? tables[k] + u * dim : NULL, col0, col1, 1);
            }
        }
        const float p = pos ? pos[i] : 0.0f;
        const float *a = amp + t * dim, *w = freq ? freq + t * dim : NULL, *th = theta ? theta + t * dim : NULL;
        const float *g = grad + 2 * (i * dim);
        for (int64_t j0 = col0; j0 < col1; j0 += CO_MAX_CHUNK) {
            const int64_t m = (col1 - j0 < CO_MAX_CHUNK) ? col1 - j0 : CO_MAX_CHUNK;
            co_row_phasor(m, w ? w + j0 : NULL, p, th ? th + j0 : NULL, ph, s, c);
            const float *gj = g + 2 * j0, *aj = a + j0;
            if (g_amp) {
                for (int64_t j = 0; j < m; ++j) v[j] = gj[2 * j] * c[j] + gj[2 * j + 1] * s[j];
                co_store(g_amp + row * dim + j0, v, m, write);
            }
            if (g_freq || g_theta) {
                for (int64_t j = 0; j < m; ++j) v[j] = (gj[2 * j + 1] * c[j] - gj[2 * j] * s[j]) * aj[j];
                if (g_theta) co_store(g_theta + row * dim + j0, v, m, write);
                if (g_freq) {
                    for (int64_t j = 0; j < m; ++j) v[j] = v[j] * p;
                    co_store(g_freq + row * dim + j0, v, m, write);
                }
            }
        }
    }
    if (!rows) {
        for (int64_t r = 0; r < vocab; ++r) {
            if (seen[r]) continue;
            for (int k = 0; k < 3; ++k) {
                if (tables[k]) memset(tables[k] + r * dim + col0, 0, sizeof(float) * (size_t)(col1 - col0));
            }
        }
        free(seen);
    }
    return 0;
}

/* sin and cos of n float32 phases (for tests of the polynomial against libm over wide ranges). */
CO_CLONES
void co_sincos_array(int64_t n, const float *x, float *s, float *c) {
    float ph[CO_MAX_CHUNK];
    for (int64_t j0 = 0; j0 < n; j0 += CO_MAX_CHUNK) {
        const int64_t m = (n - j0 < CO_MAX_CHUNK) ? n - j0 : CO_MAX_CHUNK;
        co_row_phasor(m, x + j0, 1.0f, NULL, ph, s + j0, c + j0); /* x * 1 is x exactly */
    }
}

/* A Python module so that setuptools builds and installs this file like any extension; the
 * functions above are reached through ctypes at the module's path. */
static struct PyModuleDef co_module = {PyModuleDef_HEAD_INIT, "_wave_kernel",
                                       "Native float32 kernel of paper Eq. 5 (reached through ctypes).", -1, NULL};

PyMODINIT_FUNC PyInit__wave_kernel(void) { return PyModule_Create(&co_module); }
