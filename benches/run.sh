#!/usr/bin/env bash
# The loop's costs against their floors: benches/bench.py after a release build.
# Usage: benches/run.sh [--smoke] [--only overhead|growth|control|report|judge] [--sizes 10,10000]
#        [--reps N] [--baseline OTHER_BUILD]   (overhead: another build with the defaults, same rounds)
# The full run takes 6–15 minutes on 2 cores (the disk decides); --smoke (CI) under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 benches/bench.py "$@"
