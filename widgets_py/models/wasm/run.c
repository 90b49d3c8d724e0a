/* The kernel's one entry: a program's tape, run op by op (program.py encodes it; ops.h,
   generated from program.OPS, decodes each op's fields and calls its primitive). */
#include "ops.h"

/* Runs the n int32s of the tape at `tape`: [opcode, length, fields...] one after another. */
__attribute__((export_name("run"))) void run(const int32_t *tape, int32_t n) {
  for (const int32_t *op = tape, *end = tape + n; op < end; op += op[1]) dispatch(op[0], op + 2);
}
