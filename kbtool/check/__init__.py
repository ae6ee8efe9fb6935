"""`kbtool check`: plan the run, execute it on every backend, apply the known differences, report."""
