"""``tepa-bench``: the command line (``tepa_envs.agents.evaluation.cli:main``; also
``python -m tepa_envs.agents.evaluation.cli``).

The last room: it may import every other. :mod:`.arguments` checks what every
command shares, :mod:`.commands` and :mod:`.suite` run the commands, :mod:`.app`
builds the parser and turns errors into one line and an exit status.
"""

from tepa_envs.agents.evaluation.cli.app import USAGE, build_parser, installed_version, main
from tepa_envs.agents.evaluation.cli.arguments import MAX_SEEDS, UsageError

__all__ = ["MAX_SEEDS", "USAGE", "UsageError", "build_parser", "installed_version", "main"]
