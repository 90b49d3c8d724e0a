/* Causal self-attention, forward and backward, per sequence and head (layers.attention). */
#include "kernel.h"

/* Each sequence of t rows of qkv [rows, 3c] and each head: q, k, v are the head's columns of
   qkv; y [rows, c] gets the heads side by side. With a cache (one sequence), the `past` keys
   and values come first, from kv_past ([2, heads, past, hs]: K, then V), and query i sees keys
   j <= past + i; if kv_new is not 0, the new keys and values go there ([2, heads, t, hs]).
   Keys are copied transposed to kt [hs, past + t] and values to vs [past + t, hs], so both
   products read B by rows; sc [t, past + t] holds the weights, or, if att is not 0, they are
   kept there ([sequences, heads, t, t], for the backward); yo [t, hs] and stats [t, 2] are
   work space. */
void attention(const float *qkv, float *y, const float *kv_past, float *kv_new, float *att, float *kt,
               float *vs, float *sc, float *yo, float *stats, int rows, int t, int c, int heads, int past,
               float scale) {
  int hs = c / heads, row3 = 3 * c, n = past + t; /* n: keys each query may see at most */
  for (int s = 0; s < rows; s += t) { /* s: the sequence's first row */
    for (int hd = 0; hd < heads; hd++) {
      const float *q = qkv + s * row3 + hd * hs;
      float *w = att ? att + ((s / t) * heads + hd) * t * t : sc;
      const float *pk = kv_past + hd * past * hs;
      float *nk = kv_new + hd * t * hs;
      if (past) __builtin_memcpy(vs, pk + past * c, past * hs * sizeof(float)); /* the past values, [past, hs] already */
      for (int i = 0; i < past; i++) /* kt[d, i] = k_past[i, d] */
        for (int d = 0; d < hs; d++) kt[d * n + i] = pk[i * hs + d];
      for (int i = 0; i < t; i++) {
        const float *k = q + i * row3 + c; /* k[i, 0] */
        if (past) copy(vs + (past + i) * hs, k + c, hs); /* v[i] after the cache's values (without one: read in qkv) */
        if (kv_new) { /* the cache's new rows: K [heads, t, hs], then V */
          copy(nk + i * hs, k, hs);
          copy(nk + i * hs + t * c, k + c, hs);
        }
        for (int d = 0; d < hs; d++) kt[d * n + past + i] = k[d]; /* kt[d, past + i] = k[i, d] */
      }
      triangular(q, kt, w, t, hs, n, row3, 1, n, past + 4, 0, 0); /* scores [t, past + t], those the queries see */
      softmax(w, stats, t, n, t, past, 1, scale);
      if (past) /* [t, hs], over the keys seen */
        triangular(w, vs, yo, t, n, hs, n, 1, hs, 0, past + 4, 0);
      else
        triangular(w, q + 2 * c, yo, t, n, hs, n, 1, row3, 0, 4, 0);
      for (int i = 0; i < t; i++) copy(y + (s + i) * c + hd * hs, yo + i * hs, hs); /* y[s + i, hd*hs + d] = yo[i, d] */
    }
  }
}

/* layers.attention_backward for each sequence and head (t queries over t keys): from the gradient
   of attention's output dy [rows, c] (doh: the head's columns, read in place), the forward's
   qkv [rows, 3c] (the head's q and k columns, read in place; v copied transposed to vt [hs, t])
   and att [sequences, heads, t, t]: datt = doh @ v^T, dv = att^T @ doh, dscores = att * (datt -
   rowsum(datt * att)) / root, dq = dscores @ k, dk = dscores^T @ q, written into the head's
   columns of dqkv [rows, 3c] (q, k, v thirds). datt [t, t], dqh, dkh, dvh [t, hs]: work space. */
void attention_backward(const float *dy, float *dqkv, const float *qkv, const float *att, float *vt,
                        float *datt, float *dqh, float *dkh, float *dvh, int rows, int t, int c, int heads,
                        float root) {
  int hs = c / heads, row3 = 3 * c;
  f4 vroot = splat(root);
  for (int s = 0; s < rows; s += t) {
    for (int hd = 0; hd < heads; hd++) {
      const float *ah = att + ((s / t) * heads + hd) * t * t;
      const float *doh = dy + s * c + hd * hs, *q = qkv + s * row3 + hd * hs, *k = q + c;
      for (int i = 0; i < t; i++) /* vt[d, i] = v[i, d] */
        for (int d = 0; d < hs; d++) vt[d * t + i] = q[i * row3 + 2 * c + d];
      triangular(doh, vt, datt, t, hs, t, c, 1, t, 4, 0, 0); /* datt [t, t], where att is not 0 */
      triangular(ah, doh, dvh, t, t, hs, 1, t, c, 0, 0, 1);  /* dv = att^T @ doh */
      for (int i = 0; i < t; i++) { /* datt -> dscores, where dq and dk read it */
        float *row = datt + i * t;
        const float *arow = ah + i * t;
        int lim = (i + 4) & -4; /* query i sees keys up to i: its row to the end of that vector */
        if (lim > t) lim = t;
        int lv = lim & -4, j = 0;
        f4 acc = zero4();
        for (; j < lv; j += 4) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(load(row + j), load(arow + j)));
        float sum = hsum(acc); /* rowsum(datt * att), four lanes, then the rest */
        for (; j < lim; j++) sum += row[j] * arow[j];
        f4 vsum = splat(sum);
        for (j = 0; j < lv; j += 4)
          store(row + j, wasm_f32x4_div(wasm_f32x4_mul(load(arow + j), wasm_f32x4_sub(load(row + j), vsum)), vroot));
        for (; j < lim; j++) row[j] = (arow[j] * (row[j] - sum)) / root;
      }
      triangular(datt, k, dqh, t, t, hs, t, 1, row3, 0, 4, 0); /* dq = dscores @ k */
      triangular(datt, q, dkh, t, t, hs, 1, t, row3, 0, 0, 1); /* dk = dscores^T @ q */
      for (int i = 0; i < t; i++) { /* the head's columns of dqkv, row by row */
        float *out = dqkv + (s + i) * row3 + hd * hs;
        copy(out, dqh + i * hs, hs);
        copy(out + c, dkh + i * hs, hs);
        copy(out + 2 * c, dvh + i * hs, hs);
      }
    }
  }
}
