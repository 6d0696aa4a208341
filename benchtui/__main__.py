import sys

from benchtui.cli import main

sys.exit(main())
