"""``python -m wmtsim``: the ``wmtsim`` command line, for an environment without the
installed entry point (the same app as ``[project.scripts] wmtsim``)."""

from wmtsim.interfaces.cli.main import app

if __name__ == "__main__":  # importing the module (doctest collection) runs nothing
    app(prog_name="wmtsim")
