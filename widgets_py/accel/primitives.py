"""The browser kernel's primitives, written once: each one's fields, in the order of its C
function's parameters (widgets_py/accel/wasm/*.c), and its opcode. `wasm/ops.h` is generated
from this (a struct per primitive and the dispatch of the kernel's `run`), so the C side
holds no second copy: tests/test_kernel.py fails until the header and the binary are current
(`python -m widgets_py.accel.kernel_build`).

A program (program.py) is a tape of these ops, each [opcode, length, field, field, ...] in
int32: an array's field is its byte address in the kernel's memory (0: none), a size counts
floats, a float field is its float32 bits.
"""

from __future__ import annotations

# f*: a float array, i*: an int32 array (the tape holds their byte addresses; 0: none);
# i: an int32; f: a float32. One line each, the C function's parameters in order.
OPS = {
    "product": "f* a, f* b, f* c, i m, i k, i n, i sa_i, i sa_p, i count",  # C = A @ B, `count` items one after the other
    "transpose": "f* dst, f* src, i rows, i cols",
    "softmax": "f* x, f* stats, i rows, i n, i tq, i offset, i norm, f scale",  # causal rows, in place; maxima, then sums, to stats
    "norm": "f* x, f* out, f* w, f* b, f* keep_norm, f* keep_rstd, i rows, i c, i rms",  # layer norm, or RMSNorm
    "bias": "f* x, f* b, i rows, i n, i relu",  # in place, then ReLU if relu
    "relu": "f* x, f* out, i n",  # where no bias comes first to fold it into
    "gelu": "f* x, f* out, i n",
    "add": "f* out, f* x, f* y, i n",
    "copy": "f* dst, f* src, i n",
    "divide": "f* x, i n, f s",
    "attention": "f* qkv, f* y, f* kv_past, f* kv_new, f* att, f* kt, f* vs, f* sc, f* yo, f* stats, "
                 "i rows, i t, i c, i heads, i past, f scale",
    "attention_backward": "f* dy, f* dqkv, f* qkv, f* att, f* vt, f* datt, f* dqh, f* dkh, f* dvh, "
                          "i rows, i t, i c, i heads, f root",
    "norm_backward": "f* dout, f* norm, f* rstd, f* w, f* dx, f* gw, f* gb, i rows, i c, i rms",
    "relu_backward": "f* d, f* act, i n",  # in place
    "gelu_backward": "f* d, f* x, i n",  # in place
    "colsum": "f* dst, f* src, i rows, i n",
    "pick": "f* dst, f* src, i* ids, i rows, i n",
    "onehot": "f* x, i* ids, i rows, i n",  # x[r, ids[r]] -= 1
    "scatter": "f* dst, i* ids, f* src, i rows, i c",  # dst[ids[r]] += src[r], in row order
    "adamw": "f* p, f* m, f* v, f* g, i* mask, i n, f k1, f k2, f dec, f lr, f c1, f c2, f eps",
}
FIELDS = {op: tuple(tuple(f.split()) for f in spec.split(", ")) for op, spec in OPS.items()}  # op -> ((kind, name), ...)
KINDS = {op: {name: kind for kind, name in fields} for op, fields in FIELDS.items()}  # op -> {name: kind}
CODES = {op: i + 1 for i, op in enumerate(OPS)}
PATCH = 0  # the opcode of a tape's first op when fields grow with P: [PATCH, length, (index, a, b) ...]


C_TYPES = {"f*": "float *", "i*": "int32_t *", "i": "int32_t ", "f": "float "}


def header() -> str:
    """wasm/ops.h: a struct per primitive, in OPS's field order, and run()'s dispatch."""
    lines = ["/* Generated from widgets_py/accel/primitives.py (OPS): python -m widgets_py.accel.kernel_build */",
             "#ifndef OPS_H", "#define OPS_H", '#include "kernel.h"', ""]
    lines.append(f"#define OP_PATCH {PATCH} /* (index, a, b): tape[index] = a + b p */")
    for op, code in CODES.items():
        lines.append(f"#define OP_{op.upper()} {code}")
    lines.append("")
    for op, fields in FIELDS.items():
        body = " ".join(f"{C_TYPES[kind]}{name};" for kind, name in fields)
        lines.append(f"struct {op} {{ {body} }};")
    lines += ["", "/* One op of a tape: its fields follow the opcode and the op's length. */",
              "static inline void dispatch(int32_t code, const void *fields) {", "  switch (code) {"]
    for op, fields in FIELDS.items():
        args = ", ".join(f"o->{name}" for _, name in fields)
        lines.append(f"  case OP_{op.upper()}: {{ const struct {op} *o = fields; {op}({args}); break; }}")
    lines += ["  default: __builtin_trap();", "  }", "}", "", "#endif", ""]
    return "\n".join(lines)
