"""A contributor's start: `./dev new widget|chapter` writes the files to fill in (scaffold.py)."""
