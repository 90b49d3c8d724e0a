/* The kernel's one entry: a program's tape, run op by op (program.py encodes it; ops.h,
   generated from program.OPS, decodes each op's fields and calls its primitive). */
#include "ops.h"

/* Runs the n int32s of the tape at `tape`: [opcode, length, fields...] one after another.
   A first OP_PATCH op lists (index, a, b) triples: field tape[index] is set to a + b p, p the
   program's free size (a KV cache's length), so the same tape serves every p. */
__attribute__((export_name("run"))) void run(int32_t *tape, int32_t n, int32_t p) {
  int32_t *op = tape, *end = tape + n;
  if (op < end && op[0] == OP_PATCH) {
    for (const int32_t *f = op + 2; f < op + op[1]; f += 3) tape[f[0]] = f[1] + f[2] * p;
    op += op[1];
  }
  for (; op < end; op += op[1]) dispatch(op[0], op + 2);
}
