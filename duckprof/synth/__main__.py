"""``python -m duckprof.synth OUT [--events N | --target-bytes B] [--seed S]``"""

from .writer import main

main()
