// Registers the service worker that build_hooks/offline.py writes (not under mkdocs serve).
(() => {
  "use strict";
  if (!("serviceWorker" in navigator) || !location.protocol.startsWith("http")) return;
  if (!document.querySelector('meta[name="tw-sw"]')) return;
  const url = new URL("../../sw.js", document.currentScript.src); // this file is assets/tw/offline.js
  navigator.serviceWorker.register(url).catch(() => {}); // without it the site still works online
})();
