/* The mini-GPT's primitives in WebAssembly SIMD: what every source file of the kernel shares.

   The kernel knows no model. Python (widgets_py/accel/tape.py) compiles each pass of gpt.py
   into a program of these primitives on addresses it laid out, and `run` (run.c) executes it
   in one call. Arrays are float32, row-major, addressed by pointers into the one memory;
   sizes count floats. Four lanes at a time where a row allows, the rest one by one.

   Every primitive does numpy's float32 operations in a fixed order (the products sum over k
   one multiply and one add at a time, the reductions four lanes then pairwise), so a result
   does not depend on where its arrays lie. */
#ifndef KERNEL_H
#define KERNEL_H

#include <stdint.h>
#include <wasm_simd128.h>

typedef v128_t f4;

static inline f4 load(const float *p) { return wasm_v128_load(p); }
static inline void store(float *p, f4 v) { wasm_v128_store(p, v); }
static inline f4 splat(float x) { return wasm_f32x4_splat(x); }
static inline f4 zero4(void) { return wasm_f32x4_splat(0.0f); }

/* The four lanes' sum, (0 + 1) + (2 + 3): every row reduction ends this way. */
static inline float hsum(f4 v) {
  return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
         (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

/* Lanes j..j+3 of a row that sees `vis` entries: all ones where j + lane < vis. */
static inline f4 seen(int vis, int j) {
  return wasm_i32x4_gt(wasm_i32x4_splat(vis - j), wasm_i32x4_make(0, 1, 2, 3));
}

/* products.c */
void product(const float *a, const float *b, float *c, int m, int k, int n, int sa_i, int sa_p, int count);
void triangular(const float *a, const float *b, float *c, int m, int k, int n, int sa_i, int sa_p, int sb,
                int cols, int upto, int from);
void transpose(float *dst, const float *src, int rows, int cols);

/* exp.c */
f4 exp_neg(f4 e);
void softmax(float *x, float *stats, int rows, int n, int tq, int offset, int norm, float scale);

/* rows.c */
void norm(const float *x, float *out, const float *w, const float *b, float *keep_norm, float *keep_rstd,
          int rows, int c, int rms);
void bias(float *x, const float *b, int rows, int n, int relu);
void relu(const float *x, float *out, int n);
void gelu(const float *x, float *out, int n);
void gelu_backward(float *d, const float *x, int n);
void add(float *out, const float *x, const float *y, int n);
void copy(float *dst, const float *src, int n);
void divide(float *x, int n, float s);

/* attention.c */
void attention(const float *qkv, float *y, const float *kv_past, float *kv_new, float *att, float *kt,
               float *vs, float *sc, float *yo, float *stats, int rows, int t, int c, int heads, int past,
               float scale);
void attention_backward(const float *dy, float *dqkv, const float *qkv, const float *att, float *vt,
                        float *datt, float *dqh, float *dkh, float *dvh, int rows, int t, int c, int heads,
                        float root);

/* backward.c */
void norm_backward(const float *dout, const float *nrm, const float *rstd, const float *w, float *dx,
                   float *gw, float *gb, int rows, int c, int rms);
void relu_backward(float *d, const float *act, int n);
void colsum(float *dst, const float *src, int rows, int n);
void pick(float *dst, const float *src, const int32_t *ids, int rows, int n);
void onehot(float *x, const int32_t *ids, int rows, int n);
void scatter(float *dst, const int32_t *ids, const float *src, int rows, int c);
void adamw(float *p, float *m, float *v, const float *g, const int32_t *mask, int n, float k1, float k2,
           float dec, float lr, float c1, float c2, float eps);

#endif
