// The worker protocol, written once: the page (kernel.js) and the worker (worker.js,
// through importScripts) both load this file. After Pyodide's docs/usage/webworker.md
// (one id per call, resolved by the reply with that id) and stlite's kernel (typed
// messages, namespaced events, loading starts as soon as the worker does).
//
//   page -> worker  {type: INIT, indexURL, lockFileURL, package, entry}
//                   {type: PORT} + a MessagePort to the kernel's helper (helper.js, which
//                   the page gives the other end), if the page could start one
//                   {type: "run" | "fixed" | "train" | "source" | "edited", id, payload}
//                   {type: CANCEL, id}                                   stop a long call
//                   {type: PING}                     once booted, each second: is the worker answering?
//   worker -> page  {type: PROGRESS, message, fraction} | {type: LOADED} | {type: ERROR, message}
//                   {type: WARM, failed, helped}  after LOADED: the widgets' modules and the first
//                                 changes' preparations are in (failed: what did not load; helped:
//                                 passes go to the kernel's helper)
//                   {type: STEP, id, data}                               a long call's progress
//                   {type: REPLY, id, ok, data | error}                  the call's end
//                   {type: PONG}                                         a ping's answer
// Every script URL carries its build's version (`?v=HASH` of its bytes, from the site config's
// `versions`): worker.js is started as worker.js?v=…&protocol=…&lockdown=…, the versions of
// the scripts it imports. Python never posts to the page: worker.js alone does (lockdown.js).
//
// A figure is drawn for one layout (widgets_py/engine/svg.py: "wide", "compact" for a
// phone's column). The page holds a drawing of each and shows the one its box fits
// (tw.css); RUN, EDITED and TRAIN take the `layout` shown (figures.js), LAYOUT if absent,
// and the figure of their steps and reply is drawn for it (echoed as `layout`).
(function (scope) {
  "use strict";
  const tw = (scope.tw = scope.tw || {});
  tw.protocol = Object.freeze({
    WORKER: "worker.js", // beside this file and kernel.js
    HELPER: "helper.js", // the same: a second worker that runs only the WebAssembly kernel
    PORT: "port",
    INIT: "init",
    CANCEL: "cancel",
    PING: "ping",
    PONG: "pong",
    PROGRESS: "event:progress",
    LOADED: "event:loaded",
    ERROR: "event:error",
    WARM: "event:warm",
    STEP: "step",
    REPLY: "reply",
    LAYOUT: "wide", // a call's layout when it names none (engine/svg.py WIDE)
    CALLS: Object.freeze({
      RUN: "run", // {widget, params, layout} -> steps {partial, done, message, values, text, figure, layout, alt, tables},
      //           reply {values, text, figure, layout, alt, tables} | {cancelled}
      FIXED: "fixed", // {widget, params} -> {values, text}: numbers only, for prose at fixed params
      TRAIN: "train", // {widget, params, layout} -> steps {step, steps, status, figure, layout}, reply {status, elapsed_s} | {cancelled}
      SOURCE: "source", // {widget} -> {module, file, source}: the widget's module as shipped (codepanel.js)
      EDITED: "edited", // {widget, key, code, params, layout} -> like RUN with the edited module, or {error: {kind, message, line}}
    }),
  });
})(self);
