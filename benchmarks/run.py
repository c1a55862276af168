"""`make bench`: run every benchmark script in this folder and print its figures.

Each ``bench_*.py`` prints its own lines (medians and ratios); this runner only sequences them."""
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
failed = 0
for script in sorted(here.glob("bench_*.py")):
    print(f"== {script.name}", flush=True)
    r = subprocess.run([sys.executable, str(script)], cwd=here.parent)
    failed += r.returncode != 0
sys.exit(1 if failed else 0)
