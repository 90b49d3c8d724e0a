/* Matrix products, in blocks of 4 rows x 8 columns held in eight f32x4 accumulators. */
#include "kernel.h"

/* `count` products one after the other, each item's A, B and C right after the previous
   one's: C[m, n] = A[m, k] @ B[k, n]. A's element (i, p) lies at i*sa_i + p*sa_p within its
   item (row-major A: sa_i = k, sa_p = 1; A stored transposed: sa_i = 1, sa_p = m); B and C
   are row-major. */
void product(const float *a, const float *b, float *c, int m, int k, int n, int sa_i, int sa_p, int count) {
  for (; count > 0; count--) {
    triangular(a, b, c, m, k, n, sa_i, sa_p, n, 0, 0, 0);
    a += m * k;
    b += k * n;
    c += m * n;
  }
}

/* One product, skipping what a causal mask makes 0 or nobody reads (0 turns a limit off).
   For the block of rows from i: `cols`: only columns j < i + cols are read back (the rest are
   left as they were); `upto`: A[r, p] is 0 for p >= i + upto, so the sum stops there; `from`
   (1 or 0): A[r, p] is 0 for p < i, so the sum starts at i. A sum that skips zeros is the same
   to the bit. B's rows lie sb floats apart (a head's columns read where they are in qkv).

   Per step of the sum: two vectors of B's row and four of A's elements, each splat. Past the
   last row or column a block computes rows and columns nobody reads back: it reads up to 3
   rows past A and 7 floats past B's rows, and writes as far past C (tape.py leaves slack after
   every buffer). Columns go from the last block down: a last block past n spills into the next
   row's first columns, which are written after it. */
void triangular(const float *a, const float *b, float *c, int m, int k, int n, int sa_i, int sa_p, int sb,
                int cols, int upto, int from) {
  for (int i = 0; i < m; i += 4) {
    int j = n;
    if (cols && i + cols < n) j = i + cols;
    j = (j + 7) & -8;
    int p0 = from ? (i < k ? i : k) : 0;  /* the sum's first and last steps for these rows */
    int p1 = upto && i + upto < k ? i + upto : k;
    while (j > 0) {
      j -= 8;
      f4 c00 = zero4(), c01 = zero4(), c10 = zero4(), c11 = zero4();
      f4 c20 = zero4(), c21 = zero4(), c30 = zero4(), c31 = zero4();
      const float *pa = a + i * sa_i + p0 * sa_p;
      const float *pb = b + j + p0 * sb;
      for (int p = p1 - p0; p > 0; p--) {
        f4 b0 = load(pb), b1 = load(pb + 4);
        f4 x = wasm_v128_load32_splat(pa);
        c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(x, b0));
        c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(x, b1));
        x = wasm_v128_load32_splat(pa + sa_i);
        c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(x, b0));
        c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(x, b1));
        x = wasm_v128_load32_splat(pa + 2 * sa_i);
        c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(x, b0));
        c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(x, b1));
        x = wasm_v128_load32_splat(pa + 3 * sa_i);
        c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(x, b0));
        c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(x, b1));
        pa += sa_p;
        pb += sb;
      }
      float *pc = c + i * n + j;
      store(pc, c00), store(pc + 4, c01), pc += n;
      store(pc, c10), store(pc + 4, c11), pc += n;
      store(pc, c20), store(pc + 4, c21), pc += n;
      store(pc, c30), store(pc + 4, c31);
    }
  }
}

/* dst[j, i] = src[i, j]: src [rows, cols] -> dst [cols, rows]. */
void transpose(float *dst, const float *src, int rows, int cols) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) dst[j * rows + i] = src[i * cols + j];
}
