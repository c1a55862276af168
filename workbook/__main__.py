import sys

from .cli import EXIT_NOW_VERBS, _verb, exit_now, main

code = main()
if _verb([a for a in sys.argv[1:] if a != "--debug"]) in EXIT_NOW_VERBS:
    exit_now(code)   # returns only when the normal exit is needed
sys.exit(code)
