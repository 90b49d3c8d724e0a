// @ts-check
// The single file's text encoding of its payloads (build_hooks/export/single_file.py: encode85),
// decoded in the page (export_boot.js) and in its worker (export_worker.js): one copy, written
// into the file once as a script of its own and sent to the worker as one of its sources.
// Base 85 as Python's base64.b85encode (4 bytes, big-endian, as 5 digits; a last group of n
// bytes as n + 1 digits), over printable ASCII without " & ' / < = > \ ` so that a payload
// can neither end nor escape the <script> that holds it: 25 % over the bytes, base64's 33 %.
"use strict";

const TW85 = "!#$%()*+,-.0123456789:;?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_abcdefghijklmnopqrstuvwxyz{|}~";

/** The bytes `text` encodes; an error names the first character outside the alphabet.
 *  @param {string} text
 *  @returns {Uint8Array<ArrayBuffer>} */
function twDecode85(text) {
  const digit = new Int8Array(128).fill(-1);
  for (let i = 0; i < TW85.length; i++) digit[TW85.charCodeAt(i)] = i;
  const tail = text.length % 5;
  if (tail === 1) throw new Error(`base 85: ${text.length} caràcters; un grup final d'1 sol no representa cap byte`);
  const out = new Uint8Array(Math.floor(text.length / 5) * 4 + (tail ? tail - 1 : 0));
  let at = 0;
  for (let i = 0; i < text.length; i += 5) {
    let value = 0;
    for (let j = i; j < i + 5; j++) {
      const code = j < text.length ? text.charCodeAt(j) : 126; // a short last group: padded with the top digit
      const d = code < 128 ? digit[code] : -1;
      if (d < 0) throw new Error(`base 85: el caràcter ${JSON.stringify(text[j])} (posició ${j}) no és de l'alfabet`);
      value = value * 85 + d;
    }
    if (value > 0xffffffff) throw new Error(`base 85: el grup a la posició ${i} passa de 32 bits`);
    for (let shift = 24; shift >= 0 && at < out.length; shift -= 8) out[at++] = (value >>> shift) & 0xff;
  }
  return out;
}
