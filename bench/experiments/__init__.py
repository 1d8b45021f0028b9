"""One-off experiments, each the evidence of a record in docs/decisions/ (the record names its
command). ``make bench`` does not run them; the maintained benchmarks are in bench/."""
