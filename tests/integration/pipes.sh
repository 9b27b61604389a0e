#!/usr/bin/env bash
# pipes: inputs that are not regular files read as the file itself does.
#  1. `tally report <(gzip -dc T.json.gz)`, `tally report /dev/stdin < T`, a named FIFO: the same
#     report as `tally report T` (before, report peeked at the first bytes of its one input to
#     see whether it was a job summary, and those bytes were missing from the trace).
#  2. A job of two process substitutions read by two threads: the same report as the job of the
#     two files (before, the two copies of the pipes shared one buffer and the traces came out
#     mixed: a parse error every time at -j 2).
#  3. `tally ops` and `tally diff` of pipes, compressed or not.
set -euo pipefail
: "${TALLY:?path of the tally binary}"
: "${SRC:?source directory}"
command -v python3 >/dev/null || { echo "skipped: python3 absent"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "pipes: $*" >&2; exit 1; }

gpu="$SRC/tests/data/torch_cuda_mlp.trace.json.gz"
cpu="$SRC/tests/data/torch_mlp.trace.json"
gzip -dc "$gpu" >"$work/gpu.json"

# The JSON reports of two runs, with the input's path (the one thing that differs) taken out.
same() {
  python3 - "$1" "$2" <<'PY' || fail "$3: not the report of the file"
import json, re, sys
def strip(x):
    if isinstance(x, str): # notes name the inputs ("Before: FILE. After: FILE.")
        return re.sub(r"(/dev/fd/\d+|/\S+\.json(\.gz)?)", "FILE", x)
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in ("path", "file", "files")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PY
}

# 1. one trace
"$TALLY" report "$gpu" --format json -o "$work/file.json"
"$TALLY" report <(gzip -dc "$gpu") --format json -o "$work/subst.json" ||
  fail "report <(gzip -dc T.json.gz) failed"
same "$work/file.json" "$work/subst.json" "<(gzip -dc T.json.gz)"
"$TALLY" report <(cat "$gpu") --format json -o "$work/subst_gz.json" ||
  fail "report <(cat T.json.gz) failed"
same "$work/file.json" "$work/subst_gz.json" "<(cat T.json.gz)"
"$TALLY" report /dev/stdin --format json -o "$work/devstdin.json" <"$work/gpu.json" ||
  fail "report /dev/stdin failed"
same "$work/file.json" "$work/devstdin.json" "/dev/stdin"
mkfifo "$work/fifo"
gzip -dc "$gpu" >"$work/fifo" &
"$TALLY" report "$work/fifo" --format json -o "$work/fifo.json" || fail "report of a FIFO failed"
wait
same "$work/file.json" "$work/fifo.json" "a FIFO"

# 2. a job of two pipes, read at once by two threads (five times: it was a race)
"$TALLY" report "$work/gpu.json" "$cpu" -j 2 --format json -o "$work/job_files.json"
for i in 1 2 3 4 5; do
  "$TALLY" report <(gzip -dc "$gpu") <(cat "$cpu") -j 2 --format json -o "$work/job_pipes.json" ||
    fail "a job of two pipes failed (round $i)"
  same "$work/job_files.json" "$work/job_pipes.json" "a job of two pipes (round $i)"
done

# 3. the other verbs
"$TALLY" ops "$gpu" --format json -o "$work/ops_file.json"
"$TALLY" ops <(gzip -dc "$gpu") --format json -o "$work/ops_pipe.json" || fail "ops of a pipe failed"
same "$work/ops_file.json" "$work/ops_pipe.json" "ops <(...)"
"$TALLY" diff "$cpu" "$gpu" --format json -o "$work/diff_file.json"
"$TALLY" diff <(cat "$cpu") <(cat "$gpu") --format json -o "$work/diff_pipe.json" ||
  fail "diff of two pipes failed"
same "$work/diff_file.json" "$work/diff_pipe.json" "diff <(...) <(...)"
echo "pipes: ok"
