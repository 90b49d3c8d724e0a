"""A chapter as one self-contained HTML file: `single_file.py` makes it from the chapter's built
pages (each a track), `downloads.py` links it from them, writes it in the chapter's folder, and
is `./dev export`.
"""
