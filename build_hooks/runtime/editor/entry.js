// The code editor of the widgets' code panel (docs/assets/tw/codepanel.js): CodeMirror 6
// with the Lezer Python grammar, bundled by build_hooks/runtime/editor_assets.py (rollup, pinned
// npm packages) into one classic script that defines `window.twEditor`. Colours are the
// site's own code style: Material's --md-code-hl-* variables, light and dark.
import { Compartment, EditorState, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, drawSelection, highlightActiveLineGutter, keymap, lineNumbers } from "@codemirror/view";
import { HighlightStyle, LRLanguage, LanguageSupport, bracketMatching, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { tags as t } from "@lezer/highlight";
import { parser } from "@lezer/python";

const python = new LanguageSupport(LRLanguage.define({ name: "python", parser, languageData: { commentTokens: { line: "#" } } }));

const hl = (name) => `var(--md-code-hl-${name}-color)`;
const siteStyle = HighlightStyle.define([
  { tag: t.keyword, color: hl("keyword") },
  { tag: [t.string, t.special(t.string), t.docString], color: hl("string") },
  { tag: [t.number, t.bool, t.null], color: hl("number") },
  { tag: [t.comment, t.lineComment], color: hl("comment"), fontStyle: "italic" },
  { tag: [t.function(t.variableName), t.function(t.propertyName), t.function(t.definition(t.variableName))], color: hl("function") },
  { tag: [t.className, t.definition(t.className), t.typeName], color: hl("constant") },
  { tag: [t.constant(t.variableName), t.standard(t.variableName), t.self], color: hl("constant") },
  { tag: [t.operator, t.definitionOperator, t.compareOperator, t.arithmeticOperator, t.logicOperator], color: hl("operator") },
  { tag: [t.punctuation, t.paren, t.bracket, t.brace, t.separator], color: hl("punctuation") },
  { tag: t.meta, color: hl("special") },
]);

// the line of the last error, painted across the editor
const setError = StateEffect.define();
const errorLine = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (!e.is(setError)) continue;
      if (e.value === null || e.value > tr.state.doc.lines) return Decoration.none;
      const line = tr.state.doc.line(e.value);
      deco = Decoration.set([Decoration.line({ class: "tw-code-error-line" }).range(line.from)]);
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

const lock = (readOnly) => [EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)];

export function create(parent, { doc, readOnly = true, label = "" }) {
  const editable = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), history(), drawSelection(), bracketMatching(),
        indentUnit.of("    "), EditorState.tabSize.of(4),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        python, syntaxHighlighting(siteStyle), errorLine, editable.of(lock(readOnly)),
        // focusable also when read-only: the code scrolls by keyboard (axe: scrollable-region-focusable)
        EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
      ],
    }),
  });
  return {
    kind: "codemirror",
    get value() {
      return view.state.doc.toString();
    },
    setValue(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, effects: setError.of(null) });
    },
    setReadOnly(readOnly) {
      view.dispatch({ effects: editable.reconfigure(lock(readOnly)) });
    },
    markLine(n) {
      const effects = [setError.of(n || null)];
      if (n && n <= view.state.doc.lines) {
        const pos = view.state.doc.line(n).from;
        effects.push(EditorView.scrollIntoView(pos, { y: "center" }));
        view.dispatch({ selection: { anchor: pos }, effects });
      } else view.dispatch({ effects });
    },
    focus: () => view.focus(),
  };
}
