"""Each page's Markdown and HTML: the directives (widgets, live values, quizzes) prerendered in CPython, the
code panel, the glossary's abbreviations, TeX as MathML, wide content wrapped for a narrow column.
"""
