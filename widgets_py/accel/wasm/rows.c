/* Row and element operations of the forward: norms, bias and activations, sums, copies. */
#include "kernel.h"

#define EPS 1e-5f /* the norms' epsilon, layers.layernorm's and layers.rmsnorm's */

/* The sum of a row of c floats: four lanes over whole vectors, pairwise, then the rest. */
static float row_sum(const float *x, int c) {
  int c4 = c & -4, j = 0;
  f4 vs = zero4();
  for (; j < c4; j += 4) vs = wasm_f32x4_add(vs, load(x + j));
  float s = hsum(vs);
  for (; j < c; j++) s += x[j];
  return s;
}

/* The sum of the squares of a row of c floats, less `mean` each (0: no centring). */
static float row_squares(const float *x, int c, float mean) {
  int c4 = c & -4, j = 0;
  f4 vs = zero4(), vm = splat(mean);
  for (; j < c4; j += 4) {
    f4 d = wasm_f32x4_sub(load(x + j), vm);
    vs = wasm_f32x4_add(vs, wasm_f32x4_mul(d, d));
  }
  float s = hsum(vs);
  for (; j < c; j++) {
    float d = x[j] - mean;
    s += d * d;
  }
  return s;
}

/* Per row of c: out = norm * w + b, norm = (x - mean) * rstd, rstd = 1 / sqrt(var + eps)
   (layers.layernorm); with rms, out = norm * w, norm = x * rstd, rstd = 1 / sqrt(mean(x^2) + eps)
   (layers.rmsnorm: no centring, no bias, b unread). out may be x itself. If keep_norm is not 0,
   norm [rows, c] goes there and rstd [rows] to keep_rstd (what the backward reads). The RMS
   case squares x less 0: the same operations on the same values as squaring x. */
void norm(const float *x, float *out, const float *w, const float *b, float *keep_norm, float *keep_rstd,
          int rows, int c, int rms) {
  int c4 = c & -4;
  for (int r = 0; r < rows; r++, x += c, out += c) {
    float mean = rms ? 0.0f : row_sum(x, c) / (float)c;
    float rstd = 1.0f / __builtin_sqrtf(row_squares(x, c, mean) / (float)c + EPS);
    f4 vm = splat(mean), vr = splat(rstd);
    int j = 0;
    for (; j < c4; j += 4) {
      f4 nv = rms ? wasm_f32x4_mul(load(x + j), vr) : wasm_f32x4_mul(wasm_f32x4_sub(load(x + j), vm), vr);
      if (keep_norm) store(keep_norm + j, nv);
      f4 o = wasm_f32x4_mul(nv, load(w + j));
      store(out + j, rms ? o : wasm_f32x4_add(o, load(b + j)));
    }
    for (; j < c; j++) {
      float ns = rms ? x[j] * rstd : (x[j] - mean) * rstd;
      if (keep_norm) keep_norm[j] = ns;
      out[j] = rms ? ns * w[j] : ns * w[j] + b[j];
    }
    if (keep_norm) {
      *keep_rstd++ = rstd;
      keep_norm += c;
    }
  }
}

/* x[r, j] += b[j] over rows of n, then max(., 0) if relu (layers.linear's bias, layers.relu). */
void bias(float *x, const float *b, int rows, int n, int relu) {
  for (int r = 0; r < rows; r++, x += n) {
    int j = 0;
    for (; j + 4 <= n; j += 4) {
      f4 v = wasm_f32x4_add(load(x + j), load(b + j));
      store(x + j, relu ? wasm_f32x4_pmax(v, zero4()) : v); /* pmax: x < 0 ? 0 : x, one instruction */
    }
    for (; j < n; j++) {
      float v = x[j] + b[j];
      x[j] = relu && v < 0.0f ? 0.0f : v;
    }
  }
}

#define GELU_C 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* tanh(u) = sign(u) (1 - e) / (1 + e), e = e^(-2|u|) <= 1: the exponential's range. */
static f4 tanh4(f4 u) {
  f4 e = exp_neg(wasm_f32x4_mul(splat(-2.0f), wasm_f32x4_abs(u)));
  f4 t = wasm_f32x4_div(wasm_f32x4_sub(splat(1.0f), e), wasm_f32x4_add(splat(1.0f), e));
  return wasm_v128_or(t, wasm_v128_and(u, wasm_i32x4_splat((int32_t)0x80000000))); /* u's sign */
}

/* u = sqrt(2/pi) (x + 0.044715 x^3) and its tanh, four lanes: GELU's inner parts. */
static f4 gelu_tanh(f4 x) {
  f4 u = wasm_f32x4_mul(splat(GELU_C), wasm_f32x4_add(x, wasm_f32x4_mul(splat(GELU_A), wasm_f32x4_mul(x, wasm_f32x4_mul(x, x)))));
  return tanh4(u);
}

/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's GELU (layers.gelu), its tanh from
   the exponential (within a few float32 ulps of numpy's). */
static f4 gelu4(f4 x) { return wasm_f32x4_mul(wasm_f32x4_mul(splat(0.5f), x), wasm_f32x4_add(splat(1.0f), gelu_tanh(x))); }

/* out = GELU(x) over n floats, whole vectors: the last reads up to 3 floats past x and
   writes as far past out (slack). */
void gelu(const float *x, float *out, int n) {
  for (int j = 0; j < n; j += 4) store(out + j, gelu4(load(x + j)));
}

/* d *= GELU'(x) over n floats (layers.gelu_backward), in place, as gelu() reads and writes. */
void gelu_backward(float *d, const float *x, int n) {
  for (int j = 0; j < n; j += 4) {
    f4 v = load(x + j), t = gelu_tanh(v);
    f4 inner = wasm_f32x4_add(splat(1.0f), wasm_f32x4_mul(splat(3.0f * GELU_A), wasm_f32x4_mul(v, v)));
    f4 slope = wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_mul(splat(0.5f), v),
                                                            wasm_f32x4_sub(splat(1.0f), wasm_f32x4_mul(t, t))),
                                             splat(GELU_C)), inner);
    f4 g = wasm_f32x4_add(wasm_f32x4_mul(splat(0.5f), wasm_f32x4_add(splat(1.0f), t)), slope);
    store(d + j, wasm_f32x4_mul(load(d + j), g));
  }
}

/* out[i] = max(x[i], 0), i < n (layers.relu, where no bias comes first to fold it into). */
void relu(const float *x, float *out, int n) {
  int j = 0;
  for (; j < (n & -4); j += 4) store(out + j, wasm_f32x4_pmax(load(x + j), zero4()));
  for (; j < n; j++) out[j] = x[j] < 0.0f ? 0.0f : x[j];
}

/* out[i] = x[i] + y[i], i < n (the residual stream); out may be x. */
void add(float *out, const float *x, const float *y, int n) {
  int j = 0;
  for (; j < (n & -4); j += 4) store(out + j, wasm_f32x4_add(load(x + j), load(y + j)));
  for (; j < n; j++) out[j] = x[j] + y[j];
}

/* dst[0:n] = src[0:n], regions apart: a head's row of a few floats (memory.copy calls out of
   WebAssembly, which costs more than such a row's copy). */
void copy(float *dst, const float *src, int n) {
  int j = 0;
  for (; j < (n & -4); j += 4) store(dst + j, load(src + j));
  for (; j < n; j++) dst[j] = src[j];
}

/* x[i] /= s, i < n. */
void divide(float *x, int n, float s) {
  f4 vs = splat(s);
  int j = 0;
  for (; j < (n & -4); j += 4) store(x + j, wasm_f32x4_div(load(x + j), vs));
  for (; j < n; j++) x[j] /= s;
}
