// Globals of the workers' scripts (worker.js, lockdown.js, the single file's
// export_worker.js, the service worker sw.js).
/// <reference path="tw.d.ts" />
/// <reference path="protocol.d.ts" />

interface WorkerGlobalScope {
  tw: TW;
  twLockDown?: (origin: string, base?: string) => void; // lockdown.js
  twScript?: string; // worker.js's address, set by the blob: URL that kernel.js starts it from
  twExport?: any; // export_boot.js's setup of export_worker.js
  loadPyodide?: (options: object) => Promise<any>; // pyodide.js
}

declare const __VERSION__: string; // build_hooks/hosting/offline.py fills sw.js's template
declare const __FILES__: Record<string, string>;
declare const __NOT_FOUND__: string;
declare function twDecode85(text: string): Uint8Array<ArrayBuffer>; // build_hooks/export/export_decode.js, run before the script that calls it
