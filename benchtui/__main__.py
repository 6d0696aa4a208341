import sys

from benchtui.cli.main import main

sys.exit(main())
