import sys

from ekstrain.cli import main

sys.exit(main())
