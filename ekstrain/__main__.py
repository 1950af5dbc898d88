import sys

from assembly.cli import main

sys.exit(main())
