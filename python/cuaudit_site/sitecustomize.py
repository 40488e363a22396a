# cuaudit's hooks into Python frameworks' own allocators, loaded by Python at start-up because the
# cuaudit launcher puts this directory first on PYTHONPATH (`--python-hooks no` leaves it off).
# Nothing here changes what the program does: see cuaudit_hooks.py. The sitecustomize this one
# shadows (a distribution's, a virtualenv's) still runs, right after.
import os
import sys


def _run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or os.path.abspath(spec.origin or "") == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    import cuaudit_hooks

    cuaudit_hooks.install()
except Exception as error:  # never the program's problem
    sys.stderr.write("cuaudit: warning: Python framework hooks not installed: %r\n" % (error,))
_run_shadowed_sitecustomize()
