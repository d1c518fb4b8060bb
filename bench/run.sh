#!/usr/bin/env bash
# `npm run bench` / `npm run bench:profile`: builds the server and the harness with tsconfig.build.json (the same
# build as `npm run build`) into a folder of this run only, runs the compiled harness (bench/<script>.ts) with the
# remaining arguments, and removes the folder. Not dist/: `npm run build` starts with `rm -rf dist` and other
# people build while a benchmark runs (it happened: `Cannot find module '../users/users.module'`); under
# node_modules/ so that ESLint, Prettier, Jest and tsc skip it, and modules resolve from the checkout's node_modules.
# A type error in bench/ stops the run; one elsewhere too, unless BENCH_ALLOW_TYPE_ERRORS=1 (someone mid-edit in a
# shared tree): tsc still emits, and the run goes on with a warning.
set -uo pipefail
cd "$(dirname "$0")/.."
script=$1
shift
out="node_modules/.cache/fleethub-bench/run-$$"
trap 'rm -rf "$out" "$out.tsc.log"' EXIT
mkdir -p "$out"
started=$(date +%s)
if ! node node_modules/typescript/bin/tsc -p tsconfig.build.json --outDir "$out" --sourceMap false >"$out.tsc.log"; then
  cat "$out.tsc.log" >&2
  if grep -q '^bench/' "$out.tsc.log" || [[ "${BENCH_ALLOW_TYPE_ERRORS:-}" != 1 ]]; then
    echo "bench: the build has type errors (set BENCH_ALLOW_TYPE_ERRORS=1 to run anyway when none is in bench/)" >&2
    exit 1
  fi
  echo "bench: type errors outside bench/ (BENCH_ALLOW_TYPE_ERRORS=1): running the JavaScript tsc emitted" >&2
fi
echo "bench: tsc -p tsconfig.build.json → $out in $(($(date +%s) - started)) s" >&2
# The checkout's own .bench-data/ and docs/, even when node_modules (and so the build) is a link into another one.
BENCH_ROOT="$PWD" node "$out/bench/$script.js" "$@"
