"""The page's DOM contract, written once: the classes, `data-*` attributes and ids that the
build's HTML carries (build_hooks/pages/: widget_html.py, prerender.py, codepanel.py,
exercises.py) and the page's scripts look up (host.js, url-state.js, trainer.js, figures.js,
codepanel.js, markup.js, kernel.js, offline.js, exercise.js); two an exercise gets from its
script (data-solved, data-verdict), which tests and tools read. protocol.py generates them into protocol.js
(`tw.protocol.DOM`) and protocol.d.ts as it does the messages, so a script names
`DOM.CLASS.STATUS`, never "tw-status"; tests/test_dom.py checks that the build writes every
name and that no script spells one.

Only what crosses from Python to JavaScript is here: a class only tw.css styles (tw-help,
tw-layout, tw-wrap) is the stylesheet's, and one a script makes for itself (tw-pending,
tw-copy, the code panel's) is that script's. tw.css spells these names as they are (CSS has
no constants). A `data-*` name is one lowercase word, its `dataset` key as it is.
"""

from enum import StrEnum


class Class(StrEnum):
    WIDGET = "tw-widget"  # one widget instance: data-widget, -instance, -state, -params, -autorun, -models
    HEAD = "tw-head"
    TITLE = "tw-title"
    STATUS = "tw-status"  # what the widget is doing, in words
    PROGRESS = "tw-progress"
    BODY = "tw-body"
    CONTROLS = "tw-controls"  # the form: every control's value is read from its [name]d fields
    CONTROL = "tw-control"  # one control: its <label>, its field and a slider's <output>
    FIGURE = "tw-figure"  # a slot per layout drawn, [data-layout]
    VALUES = "tw-values"  # a row per output shown, [data-value]
    TABLES = "tw-tables"
    TRAIN = "tw-train"  # a trainable widget's block
    TRAIN_START = "tw-train-start"
    TRAIN_CANCEL = "tw-train-cancel"
    TRAIN_PROGRESS = "tw-train-progress"
    TRAIN_STATUS = "tw-train-status"
    PARAMS = "tw-params"  # the parameters as printed (no controls on paper)
    LIVE = "tw-live"  # a value in prose bound to an instance: data-live="instance.output"
    FIXED = "tw-fixed"  # a value in prose at fixed parameters: data-fixed, data-params
    EXERCISE = "tw-exercise"  # one exercise (build_hooks/pages/exercises.py): data-exercise; exercise.js
    EXERCISE_STARTER = "tw-exercise-starter"  # its starter code as built: the editor's first text
    EXERCISES = "tw-exercises"  # the page's exercises listed (md:exercicis): li data-listed; exercise.js
    EXERCISES_STATUS = "tw-exercises-status"  # its status line: how many are solved


class Data(StrEnum):
    WIDGET = "widget"  # the widget's name (registry)
    INSTANCE = "instance"  # its instance on the page (the directive's id=): its URL key
    STATE = "state"  # "static" as built; host.js: loading, ready, error
    PARAMS = "params"  # JSON: the parameters it was drawn with
    AUTORUN = "autorun"
    MODELS = "models"  # "true" on a widget that reads the model data (Widget.models): it waits for it
    VALUE = "value"  # an output's name
    LAYOUT = "layout"  # a figure slot's layout (engine/svg.py)
    GRID = "grid"  # a long integer slider's [min, step, count] (widget_html.is_grid)
    POSITIONS = "positions"  # JSON: a slider's values
    LABELS = "labels"  # JSON: their text
    KIND = "kind"  # a slider's number kind: int or float (numbers.js)
    JSON = "json"  # a fixed parameter's value (a hidden field)
    LIVE = "live"
    FIXED = "fixed"
    CONFIG = "config"  # JSON: the site config (protocol.SiteConfig)
    ENABLED = "enabled"  # the code panel: "false" where the page turns it off
    EDITOR = "editor"  # the code panel: the editor bundle's path
    EXERCISE = "exercise"  # an exercise's name (registry.exercise)
    LISTED = "listed"  # an exercise's name in the page's list of them (md:exercicis)
    SOLVED = "solved"  # exercise.js: "true" on the exercise once an answer passed
    VERDICT = "verdict"  # exercise.js: the last check's pass | fail | error | timeout


class Id(StrEnum):
    CONFIG = "tw-config"  # on a page with widgets or live values: data-config
    CODE = "tw-code"  # the code panel's settings: data-enabled, data-editor


def constants() -> dict[str, dict[str, str]]:
    """What protocol.js carries as `DOM`."""
    return {kind.__name__.upper(): {m.name: m.value for m in kind} for kind in (Class, Data, Id)}
