"""``python -m tepa_envs.agents.evaluation.cli``: the same as ``tepa-bench``."""

import sys

from tepa_envs.agents.evaluation.cli.app import main

sys.exit(main())
