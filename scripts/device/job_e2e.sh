#!/usr/bin/env bash
# A real tuning job through the API on a real GPU worker, on the device machine:
#   run(command="bash scripts/device/job_e2e.sh", carry=[".whl", ".debs"], timeout_s=420)
# .whl/ holds the Python 3.12 wheels of scripts/device/wheels.txt and .debs/ Debian's
# redis-server with libjemalloc2 and liblzf1 (the device has no package registry;
# scripts/device/offline_deps.sh says how to fetch both).
# It starts the whole system the way `./tw up` does (python -m tunerweb.up: Redis, one worker
# per GPU, the web server), makes an API token, submits C12 through POST /api/jobs/, polls
# GET /api/jobs/<id>/ until the job ends, downloads the best-config log, and stops everything.
# Writes to $OUT: up.log, job.json, best.log, records.log; prints a short summary last.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
GPU=${GPU:-h200}  # GPU=h200-replay tries the script on a machine with no GPU
source scripts/device/offline_deps.sh
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_VAR_DIR=/tmp/twvar REDIS_URL=redis://127.0.0.1:6390/0
TRIALS=${TRIALS:-300}
redis-server --version || exit 1

python3 -m tunerweb.up --port 8000 >"$OUT/up.log" 2>&1 &
UP=$!
trap 'kill -INT $UP 2>/dev/null' EXIT  # every early exit below still stops Redis, the workers and the server
for _ in $(seq 120); do grep -q "tunerweb is up" "$OUT/up.log" && break; sleep 1; done
grep -q "tunerweb is up" "$OUT/up.log" || { cat "$OUT/up.log"; exit 1; }
KEY=$(python3 manage.py create_token admin | grep -oE '[0-9a-f]{40}' | head -1)
API=http://127.0.0.1:8000/api
# The worker registers its GPU once CuPy has started; submitting earlier is refused ("no GPU online").
for _ in $(seq 60); do
    ANSWER=$(curl -s -H "Authorization: Token $KEY" -H "Content-Type: application/json" \
        -d "{\"template\":\"conv2d_nchw.cuda\",\"preset\":\"C12\",\"tuner\":\"xgb\",\"n_trial\":$TRIALS,\"gpus\":[\"$GPU\"]}" \
        "$API/jobs/")
    JOB=$(echo "$ANSWER" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))' 2>/dev/null)
    [ -n "$JOB" ] && break
    sleep 2
done
echo "submit answered: $ANSWER"
[ -n "$JOB" ] || { kill -INT $UP; wait $UP; tail -50 "$OUT/up.log"; exit 1; }

START=$(date +%s)
for _ in $(seq ${POLLS:-75}); do
    curl -s -H "Authorization: Token $KEY" "$API/jobs/$JOB/" >"$OUT/job.json"
    STATE=$(python3 -c 'import json; print(json.load(open("'"$OUT/job.json"'"))["state"])')
    case "$STATE" in done|failed|cancelled) break ;; esac
    sleep 2
done
END=$(date +%s)
curl -s "$API/export/best/?task=conv2d_nchw.cuda&device=$GPU" >"$OUT/best.log"
curl -s "$API/export/records/?task=conv2d_nchw.cuda&device=$GPU" >"$OUT/records.log"
kill -INT $UP; wait $UP

echo "job $JOB: $STATE after $((END - START)) s"
python3 - "$OUT/job.json" <<'EOF'
import json, sys
job = json.load(open(sys.argv[1]))
for run in job.get("runs", []):
    print({k: run.get(k) for k in ("gpu", "replay", "state", "trials_done", "trials_planned", "best_cost", "best_gflops", "failures", "worker")})
EOF
echo "records stored for $GPU: $(grep -vc '^#' "$OUT/records.log")"
echo "best line:"; grep -v '^#' "$OUT/best.log" | head -1
