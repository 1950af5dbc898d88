import sys

from ekstrain.assembly.cli import main

sys.exit(main())
