"""A chapter as one self-contained HTML file: `single_file.py` makes it from the built page,
`downloads.py` links it from the page, writes it beside it, and is `./dev export`.
"""
