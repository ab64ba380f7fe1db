"""``python -m optplan.cli``: the ``optplan`` command."""

from optplan.cli import command

command()
