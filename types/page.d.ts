// Globals of the page's scripts (docs/assets/tw/*.js but the workers, build_hooks/export/export_boot.js).
/// <reference path="tw.d.ts" />
/// <reference path="protocol.d.ts" />

interface Window {
  tw: TW;
  twEditor?: any; // the code panel's CodeMirror bundle (assets/tw/editor.js, built by npm)
  DOMPurify?: any; // assets/tw/purify.min.js
  document$?: any; // Material's instant-navigation observable
}

interface Navigator {
  connection?: { saveData?: boolean }; // Network Information API: Chromium only
}

declare const __EXPORT__: any; // build_hooks/export/single_file.py writes the single file's payload here
declare const __TRACKS__: { param: string; attr: string; default: string }; // single_file.py: the ?pista= parameter, the templates' attribute, the default track
declare function twDecode85(text: string): Uint8Array<ArrayBuffer>; // build_hooks/export/export_decode.js, run before the script that calls it
