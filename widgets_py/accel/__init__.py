"""What exists because Pyodide's numpy is slow: the WebAssembly SIMD kernel (kernel.py, wasm/),
the tape that records the mini-GPT's passes as the kernel's programs (tape, builder, program,
primitives, compiled) and the backend that answers the maths' products (backend.py). Imports
the maths (below it), never the engine or a chapter. Package data: `wasm/kernel.wasm`."""
