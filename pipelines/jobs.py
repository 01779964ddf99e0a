"""Jobs: placeholder until the benchmark/refresh work defines them."""

JOBS: list = []
