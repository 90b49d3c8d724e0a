// @ts-check
// The kernel's helper: a second worker that runs only the mini-GPT's WebAssembly kernel
// (kernel.wasm, no Python), so that a compute with several independent passes (the quantize
// widget's held-out losses, one per format) uses the reader's second core as well.
//
// kernel.js starts it beside the Pyodide worker and hands each one end of a MessageChannel.
// On that port the Pyodide worker sends, in order:
//   {module}                    once: the kernel it runs itself (widgets_py/accel/wasm/kernel.wasm),
//                               compiled: V8 shares its code, already tiered up, between workers
//   {wasm: bytes}               instead, if it asked for them: where the module cannot be shared
//                               (a single-file chapter opened from disk: an opaque origin)
//   {id, ops}                   a recorded pass (widgets_py/engine/offload.py): ["reserve", floats],
//                               ["write", at, Float32Array], ["call", "run", [tape, n]], ["read", at, size],
//                               replayed on this worker's own instance
//   {cancel: [id, ...]}         jobs no longer wanted: dropped if not started
// and gets back {ready: true} once the kernel is in (or {ready: false, error}, or {bytes: true}
// for a module it could not receive), then for each job {id, reads: [Float32Array, ...]} (the
// pass's reads, in order) or {id, error}.
// The same kernel on the same inputs: the results are the bits the worker would compute.
// A second module is not taken: only the kernel the worker loaded first runs here.
"use strict";
(() => { // one closure: lockdown.js pins every global name it does not keep, a function's too
const PAGE = 65536; // bytes in a WebAssembly memory page
/** @type {MessagePort | null} */
let port = null;
const reply = (/** @type {TWFromHelper} */ msg, /** @type {Transferable[]} */ transfer = []) => port.postMessage(msg, transfer);
let kernel = null; // the instance's exports, once the module is in (jobs come only after {ready: true})
const queue = []; // jobs not started yet, in order

/** The reads of a recorded pass (protocol.py: TWOp), replayed on this worker's kernel. */
function replay(/** @type {TWOp[]} */ ops) {
  const { memory } = kernel;
  const reads = [];
  for (const op of ops) {
    if (op[0] === "reserve") {
      const missing = op[1] * 4 - memory.buffer.byteLength;
      if (missing > 0) memory.grow(Math.ceil(missing / PAGE));
    } else if (op[0] === "write") {
      new Float32Array(memory.buffer, op[1] * 4, op[2].length).set(op[2]);
    } else if (op[0] === "call") {
      if (typeof kernel[op[1]] !== "function") throw new TypeError(`${op[1]}: el nucli no té aquesta funció`);
      kernel[op[1]](...op[2]);
    } else if (op[0] === "read") {
      reads.push(new Float32Array(memory.buffer, op[1] * 4, op[2]).slice());
    } else {
      throw new TypeError(`${op[0]}: operació desconeguda`);
    }
  }
  return reads;
}

// one job per turn, so that a cancel that arrives meanwhile overtakes the jobs still queued
const turns = new MessageChannel();
turns.port1.onmessage = () => {
  const job = queue.shift();
  if (!job) return;
  try {
    const reads = replay(job.ops);
    reply({ id: job.id, reads }, reads.map((r) => r.buffer));
  } catch (error) {
    reply({ id: job.id, error: String(error && error.message ? error.message : error) });
  }
  if (queue.length) turns.port2.postMessage(null);
};

function receive(/** @type {MessageEvent<TWToHelper>} */ { data }) {
  if ("module" in data || "wasm" in data) {
    if (kernel) return reply({ ready: true }); // one kernel, the first one given: the shipped one
    try {
      kernel = new WebAssembly.Instance("module" in data ? data.module : new WebAssembly.Module(data.wasm)).exports;
      reply({ ready: true });
    } catch (error) {
      reply({ ready: false, error: String(error) });
    }
  } else if ("cancel" in data) {
    const dropped = new Set(data.cancel);
    for (let i = queue.length - 1; i >= 0; i--) {
      if (dropped.has(queue[i].id)) {
        reply({ id: queue[i].id, error: "cancelled" });
        queue.splice(i, 1);
      }
    }
  } else {
    queue.push(data);
    if (queue.length === 1) turns.port2.postMessage(null);
  }
}

self.onmessage = ({ ports }) => {
  if (port || !ports.length) return; // one port, the first one given
  port = ports[0];
  port.onmessage = receive;
  port.onmessageerror = () => reply({ bytes: true }); // the module, where it cannot be shared
};
// kernel.js starts this worker from a blob: URL that imports lockdown.js first (the single
// file: its source before this one): the same allow-list of globals as the Pyodide worker's
if (self.twLockDown) self.twLockDown(self.location.origin);
})();
