#!/usr/bin/env bash
# ResNet-18 C1–C12 as ONE network job, spread over every GPU of the host (issue 19):
#   run(command="bash scripts/device/network_job.sh", carry=[".whl", ".debs"], timeout_s=240)
# on nvidia-h200 (one GPU), and the same command on nvidia-h200-x2 / -x4 / -x8 for the
# multi-GPU form (one worker per GPU, as `./tw up` starts them; the same budget, so the
# wall-time ratio to the one-GPU run is the speed-up). The device has no package registry:
# .whl/ holds the Python 3.12 wheels and .debs/ Debian's redis-server (scripts/device/offline_deps.sh
# says which and how to fetch them).
# It starts the system as `./tw up` does (python -m tunerweb.up: Redis, a worker per GPU found
# by CuPy, the web server; SQLite), imports the committed cuDNN baselines of C1–C12
# (docs/gpu-runs/baselines-h200.log), waits until every GPU's worker is online, submits
# POST /api/network-jobs/ {"network": "resnet18", ...}, polls it until it ends, downloads the
# network's best-config log, and stops everything, all within LIMIT seconds (default 145): a job
# still running LIMIT - 20 s after the script started is cancelled, and its summary says so.
# Writes two files to $OUT: summary.txt (the table printed last, the estimate over time, the
# end of the system's log) and best.log. BUDGET (trials, default 384), ROUND (trials per round,
# 16), TUNER (xgb), ALLOCATION (gradient) and BATCH (trials per measured batch, 16) can be set.
# Without a GPU (a dry run of this very script): GPU=h200-replay and TUNERWEB_REPLAY_RECORDING=
# the 12 layers' H200 logs in one file (zcat docs/benchmarks/conv2d-h200-logs/c*.log.gz), which
# one replay worker answers from.
set -uo pipefail
STARTED=$(date +%s)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
GPU=${GPU:-h200} PORT=${PORT:-8000} LIMIT=${LIMIT:-145}
BUDGET=${BUDGET:-384} ROUND=${ROUND:-16} TUNER=${TUNER:-xgb} ALLOCATION=${ALLOCATION:-gradient}
source scripts/device/offline_deps.sh
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_VAR_DIR=${TUNERWEB_VAR_DIR:-/tmp/twvar-network} \
    REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6391/0} TUNERWEB_JOB_BATCH_SIZE=${BATCH:-16}
RUN=$TUNERWEB_VAR_DIR/run  # up.log and job.json: what summary.txt is made of
rm -rf "$RUN" "$TUNERWEB_VAR_DIR/tunerweb.sqlite3" && mkdir -p "$RUN"
redis-server --version >/dev/null || { echo "no redis-server: carry .debs (see offline_deps.sh)"; exit 1; }
GPUS=$(python3 -c "import cupy; print(cupy.cuda.runtime.getDeviceCount())" 2>/dev/null || echo 0)
WANT=$(( GPUS > 0 ? GPUS : 1 ))
fail() { echo "$1"; tail -40 "$RUN/up.log"; { echo "$1"; tail -200 "$RUN/up.log"; } >"$OUT/summary.txt"; exit 1; }

python3 -m tunerweb.up --port "$PORT" >"$RUN/up.log" 2>&1 &
UP=$!
trap 'kill -INT $UP 2>/dev/null; wait $UP 2>/dev/null' EXIT  # every early exit still stops Redis, the workers and the server
for _ in $(seq 90); do grep -q "tunerweb is up" "$RUN/up.log" && break; kill -0 $UP 2>/dev/null || break; sleep 1; done
grep -q "tunerweb is up" "$RUN/up.log" || fail "tunerweb did not come up (within 90 s)"
python3 manage.py import_baselines docs/gpu-runs/baselines-h200.log || fail "the baselines did not import"
KEY=$(python3 manage.py create_token admin | grep -oE '[0-9a-f]{40}' | head -1)
API=http://127.0.0.1:$PORT/api
# Every GPU's worker registers once CuPy has started; rounds go to the workers online.
ONLINE=0
for _ in $(seq 40); do
    ONLINE=$(python3 manage.py shell -c "from jobs.models import Worker; print(Worker.objects.online().filter(queue='$GPU').count())" 2>/dev/null | tail -1)
    [ "${ONLINE:-0}" -ge "$WANT" ] && break
    sleep 1
done
echo "${ONLINE:-0} of $WANT workers of $GPU online after $(( $(date +%s) - STARTED )) s"
BODY="{\"network\":\"resnet18\",\"tuner\":\"$TUNER\",\"n_trial\":$BUDGET,\"round_trials\":$ROUND,\"allocation\":\"$ALLOCATION\",\"gpus\":[\"$GPU\"]}"
START=$(date +%s.%N)
# The Idempotency-Key makes a retried submit (a dropped answer) return the same job.
ANSWER=$(curl -s --retry 2 -H "Authorization: Token $KEY" -H "Idempotency-Key: network-job-$STARTED" \
    -H "Content-Type: application/json" -d "$BODY" "$API/network-jobs/")
JOB=$(echo "$ANSWER" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))' 2>/dev/null)
[ -n "$JOB" ] || fail "submit answered: $ANSWER"

CANCEL_AT=$(( STARTED + LIMIT - 20 ))
while :; do
    curl -s -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/" >"$RUN/job.json"
    STATE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$RUN/job.json")
    case "$STATE" in done|failed|cancelled) break ;; esac
    if [ "$(date +%s)" -ge "$CANCEL_AT" ]; then
        echo "$(( CANCEL_AT - STARTED )) s after the start: cancelling job $JOB"
        curl -s -X POST -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/cancel/" >/dev/null
        sleep 4  # a running round stops after its current batch
        curl -s -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/" >"$RUN/job.json"
        STATE="cancelled at the deadline"
        break
    fi
    sleep 1
done
END=$(date +%s.%N)
curl -s -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/best.log" >"$OUT/best.log"
tail -60 "$RUN/up.log" >"$RUN/up-tail.log"  # before the stop, whose noise would fill the tail
kill -INT $UP; wait $UP
trap - EXIT

python3 - "$RUN" "$JOB" "$STATE" "$START" "$END" "$GPUS" "$STARTED" <<'PY' | tee "$RUN/table.txt"
import json, sys, time
run, job_id, state, start, end, gpus, started = sys.argv[1:]
job = json.load(open(f"{run}/job.json"))
us = lambda s: f"{s * 1e6:.1f}" if s else "—"
for gpu in job["gpus"]:
    workers = sorted({t["worker"] for t in gpu["tasks"] if t["worker"]})
    print(f"estimate over time: network µs (cuDNN {us(gpu['vendor_estimate'])} µs)")
    print(f"{'s':>6} {'trials':>6} {'network µs':>10} {'× cuDNN':>7}")
    line = gpu["timeline"]
    for p in [line[i] for i in sorted({*range(0, len(line), max(1, len(line) // 8)), len(line) - 1}) if line]:
        ratio = f"{gpu['vendor_estimate'] / p['estimate']:.2f}" if gpu["vendor_estimate"] else "—"
        print(f"{p['seconds']:>6.1f} {p['trials']:>6} {us(p['estimate']):>10} {ratio:>7}")
    print(f"{'task':<5} {'×':>2} {'trials':>6} {'best µs':>8} {'cuDNN µs':>8} {'speedup':>7} {'share':>6}  state / worker")
    for t in gpu["tasks"]:
        share = f"{t['network_share'] * 100:.1f}%" if t["network_share"] else "—"
        speed = f"{t['speedup']:.2f}" if t["speedup"] else "—"
        print(f"{t['label']:<5} {t['weight']:>2} {t['trials_done']:>6} {us(t['best_cost']):>8} {us(t['vendor_cost']):>8}"
              f" {speed:>7} {share:>6}  {t['state']} / {t['worker'] or ''} {t['message']}")
    print(f"network job {job_id} (resnet18, {job['tuner']}, {job['n_trial']} trials, rounds of {job['round_trials']},"
          f" {job['allocation']}) on {gpu['gpu']}: {state}; {gpu['trials_done']} trials stored of {gpu['trials_allotted']} given;"
          f" workers: {', '.join(workers)} ({gpus} GPU(s))")
    print(f"estimated network time {us(gpu['estimate'])} µs, cuDNN {us(gpu['vendor_estimate'])} µs"
          f" ({format(gpu['speedup'], '.2f') + '×' if gpu['speedup'] else 'no estimate until every task has a best, so no'} the vendor's speed); job wall time {float(end) - float(start):.1f} s,"
          f" script {time.time() - int(started):.0f} s")
PY
LINES=$(grep -vc '^#' "$OUT/best.log")
echo "best-config log: $LINES lines"
{ echo "# the system's log, its last 60 lines before the stop"; cat "$RUN/up-tail.log"; echo; cat "$RUN/table.txt"; echo "best-config log: $LINES lines"; } >"$OUT/summary.txt"
