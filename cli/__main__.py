import sys

from ekstrain.cli.main import main

sys.exit(main())
