"""ekstrain's CrossGuard policy pack: plain rules (``rules``) and their pulumi-policy adapters (``pack``).

The rules read the program's shared names from ``ekstrain/facts/names.py`` (standard library only), one
directory above the pack: the CLI runs the pack from this checkout (``--policy-pack policy``) in
policy/venv, which has pulumi-policy and nothing of the program.
"""

import pathlib
import sys

_REPO = str(pathlib.Path(__file__).resolve().parents[2])
if _REPO not in sys.path:  # appended: an ekstrain already importable (tests, the program's venv) wins
    sys.path.append(_REPO)
