"""What every experiment shares: the scenario and grid, the experiment loop and its executors,
the one store, the one two-sample comparison and the statistics model, run status. Core
knows no kind, stack, analysis or report by import (kinds are loaded by name)."""
