/* Generated from widgets_py/accel/primitives.py (OPS): python -m widgets_py.accel.kernel_build */
#ifndef OPS_H
#define OPS_H
#include "kernel.h"

#define OP_PATCH 0 /* (index, a, b): tape[index] = a + b p */
#define OP_PRODUCT 1
#define OP_TRANSPOSE 2
#define OP_SOFTMAX 3
#define OP_NORM 4
#define OP_BIAS 5
#define OP_RELU 6
#define OP_GELU 7
#define OP_ADD 8
#define OP_COPY 9
#define OP_DIVIDE 10
#define OP_ATTENTION 11
#define OP_ATTENTION_BACKWARD 12
#define OP_NORM_BACKWARD 13
#define OP_RELU_BACKWARD 14
#define OP_GELU_BACKWARD 15
#define OP_COLSUM 16
#define OP_PICK 17
#define OP_ONEHOT 18
#define OP_SCATTER 19
#define OP_ADAMW 20

struct product { float *a; float *b; float *c; int32_t m; int32_t k; int32_t n; int32_t sa_i; int32_t sa_p; int32_t count; };
struct transpose { float *dst; float *src; int32_t rows; int32_t cols; };
struct softmax { float *x; float *stats; int32_t rows; int32_t n; int32_t tq; int32_t offset; int32_t norm; float scale; };
struct norm { float *x; float *out; float *w; float *b; float *keep_norm; float *keep_rstd; int32_t rows; int32_t c; int32_t rms; };
struct bias { float *x; float *b; int32_t rows; int32_t n; int32_t relu; };
struct relu { float *x; float *out; int32_t n; };
struct gelu { float *x; float *out; int32_t n; };
struct add { float *out; float *x; float *y; int32_t n; };
struct copy { float *dst; float *src; int32_t n; };
struct divide { float *x; int32_t n; float s; };
struct attention { float *qkv; float *y; float *kv_past; float *kv_new; float *att; float *kt; float *vs; float *sc; float *yo; float *stats; int32_t rows; int32_t t; int32_t c; int32_t heads; int32_t past; float scale; };
struct attention_backward { float *dy; float *dqkv; float *qkv; float *att; float *vt; float *datt; float *dqh; float *dkh; float *dvh; int32_t rows; int32_t t; int32_t c; int32_t heads; float root; };
struct norm_backward { float *dout; float *norm; float *rstd; float *w; float *dx; float *gw; float *gb; int32_t rows; int32_t c; int32_t rms; };
struct relu_backward { float *d; float *act; int32_t n; };
struct gelu_backward { float *d; float *x; int32_t n; };
struct colsum { float *dst; float *src; int32_t rows; int32_t n; };
struct pick { float *dst; float *src; int32_t *ids; int32_t rows; int32_t n; };
struct onehot { float *x; int32_t *ids; int32_t rows; int32_t n; };
struct scatter { float *dst; int32_t *ids; float *src; int32_t rows; int32_t c; };
struct adamw { float *p; float *m; float *v; float *g; int32_t *mask; int32_t n; float k1; float k2; float dec; float lr; float c1; float c2; float eps; };

/* One op of a tape: its fields follow the opcode and the op's length. */
static inline void dispatch(int32_t code, const void *fields) {
  switch (code) {
  case OP_PRODUCT: { const struct product *o = fields; product(o->a, o->b, o->c, o->m, o->k, o->n, o->sa_i, o->sa_p, o->count); break; }
  case OP_TRANSPOSE: { const struct transpose *o = fields; transpose(o->dst, o->src, o->rows, o->cols); break; }
  case OP_SOFTMAX: { const struct softmax *o = fields; softmax(o->x, o->stats, o->rows, o->n, o->tq, o->offset, o->norm, o->scale); break; }
  case OP_NORM: { const struct norm *o = fields; norm(o->x, o->out, o->w, o->b, o->keep_norm, o->keep_rstd, o->rows, o->c, o->rms); break; }
  case OP_BIAS: { const struct bias *o = fields; bias(o->x, o->b, o->rows, o->n, o->relu); break; }
  case OP_RELU: { const struct relu *o = fields; relu(o->x, o->out, o->n); break; }
  case OP_GELU: { const struct gelu *o = fields; gelu(o->x, o->out, o->n); break; }
  case OP_ADD: { const struct add *o = fields; add(o->out, o->x, o->y, o->n); break; }
  case OP_COPY: { const struct copy *o = fields; copy(o->dst, o->src, o->n); break; }
  case OP_DIVIDE: { const struct divide *o = fields; divide(o->x, o->n, o->s); break; }
  case OP_ATTENTION: { const struct attention *o = fields; attention(o->qkv, o->y, o->kv_past, o->kv_new, o->att, o->kt, o->vs, o->sc, o->yo, o->stats, o->rows, o->t, o->c, o->heads, o->past, o->scale); break; }
  case OP_ATTENTION_BACKWARD: { const struct attention_backward *o = fields; attention_backward(o->dy, o->dqkv, o->qkv, o->att, o->vt, o->datt, o->dqh, o->dkh, o->dvh, o->rows, o->t, o->c, o->heads, o->root); break; }
  case OP_NORM_BACKWARD: { const struct norm_backward *o = fields; norm_backward(o->dout, o->norm, o->rstd, o->w, o->dx, o->gw, o->gb, o->rows, o->c, o->rms); break; }
  case OP_RELU_BACKWARD: { const struct relu_backward *o = fields; relu_backward(o->d, o->act, o->n); break; }
  case OP_GELU_BACKWARD: { const struct gelu_backward *o = fields; gelu_backward(o->d, o->x, o->n); break; }
  case OP_COLSUM: { const struct colsum *o = fields; colsum(o->dst, o->src, o->rows, o->n); break; }
  case OP_PICK: { const struct pick *o = fields; pick(o->dst, o->src, o->ids, o->rows, o->n); break; }
  case OP_ONEHOT: { const struct onehot *o = fields; onehot(o->x, o->ids, o->rows, o->n); break; }
  case OP_SCATTER: { const struct scatter *o = fields; scatter(o->dst, o->ids, o->src, o->rows, o->c); break; }
  case OP_ADAMW: { const struct adamw *o = fields; adamw(o->p, o->m, o->v, o->g, o->mask, o->n, o->k1, o->k2, o->dec, o->lr, o->c1, o->c2, o->eps); break; }
  default: __builtin_trap();
  }
}

#endif
