#!/usr/bin/env bash
# ResNet-18 C1–C12 as ONE network job, spread over every GPU of the host (issue 19):
#   run(command="bash scripts/device/network_job.sh", carry=[".whl", ".debs"], timeout_s=480)
# on nvidia-h200 (one GPU), and the same command on nvidia-h200-x2 / -x4 / -x8 for the
# multi-GPU form (one worker per GPU, as `./tw up` starts them; the same budget, so the
# wall-time ratio to the one-GPU run is the speed-up). .whl/ and .debs/ are job_e2e.sh's.
# It starts the system as `./tw up` does (python -m tunerweb.up: Redis, a worker per GPU found
# by CuPy, the web server), imports the committed cuDNN baselines of C1–C12
# (docs/gpu-runs/baselines-h200.log), waits until every GPU's worker is online, submits
# POST /api/network-jobs/ {"network": "resnet18", ...}, polls it until it ends, downloads the
# network's best-config log, and stops everything.
# Writes to $OUT: up.log, job.json (the last progress), best.log, timeline.tsv, summary.txt;
# prints the summary table last. BUDGET (trials, default 1024), ROUND (trials per round, 64),
# TUNER (xgb), ALLOCATION (gradient), BATCH (trials per measured batch, 32) and DEADLINE
# (seconds the job may take before it is cancelled, 270) can be set.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# Without a GPU: GPU=h200-replay TUNERWEB_REPLAY_RECORDING=<the 12 layers' H200 logs in one file>
# (docs/benchmarks/conv2d-h200-logs/c*.log.gz put together) runs it against one replay worker.
GPU=${GPU:-h200} PORT=${PORT:-8000}
BUDGET=${BUDGET:-1024} ROUND=${ROUND:-64} TUNER=${TUNER:-xgb} ALLOCATION=${ALLOCATION:-gradient}
source scripts/device/offline_deps.sh
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_VAR_DIR=${TUNERWEB_VAR_DIR:-/tmp/twvar-network} \
    REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6391/0} TUNERWEB_JOB_BATCH_SIZE=${BATCH:-32}
redis-server --version >/dev/null || exit 1
GPUS=$(python3 -c "import cupy; print(cupy.cuda.runtime.getDeviceCount())" 2>/dev/null || echo 0)
WANT=$(( GPUS > 0 ? GPUS : 1 ))

python3 -m tunerweb.up --port "$PORT" >"$OUT/up.log" 2>&1 &
UP=$!
trap 'kill -INT $UP 2>/dev/null' EXIT  # every early exit below still stops Redis, the workers and the server
for _ in $(seq 120); do grep -q "tunerweb is up" "$OUT/up.log" && break; sleep 1; done
grep -q "tunerweb is up" "$OUT/up.log" || { cat "$OUT/up.log"; exit 1; }
python3 manage.py import_baselines docs/gpu-runs/baselines-h200.log
KEY=$(python3 manage.py create_token admin | grep -oE '[0-9a-f]{40}' | head -1)
API=http://127.0.0.1:$PORT/api
# Every GPU's worker registers once CuPy has started; rounds go to the workers online.
for _ in $(seq 90); do
    ONLINE=$(python3 manage.py shell -c "from jobs.models import Worker; print(Worker.objects.online().filter(queue='$GPU').count())" 2>/dev/null | tail -1)
    [ "${ONLINE:-0}" -ge "$WANT" ] && break
    sleep 2
done
echo "$ONLINE of $WANT workers of $GPU online"
BODY="{\"network\":\"resnet18\",\"tuner\":\"$TUNER\",\"n_trial\":$BUDGET,\"round_trials\":$ROUND,\"allocation\":\"$ALLOCATION\",\"gpus\":[\"$GPU\"]}"
START=$(date +%s.%N)
ANSWER=$(curl -s -H "Authorization: Token $KEY" -H "Content-Type: application/json" -d "$BODY" "$API/network-jobs/")
JOB=$(echo "$ANSWER" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))' 2>/dev/null)
[ -n "$JOB" ] || { echo "submit answered: $ANSWER"; tail -50 "$OUT/up.log"; exit 1; }

# DEADLINE seconds after submitting, a job still running is cancelled (its summary says so), so
# the whole call stays within the lease: start-up ~1 min, the job itself 2-4 min on one H200.
while :; do
    curl -s -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/" >"$OUT/job.json"
    STATE=$(python3 -c 'import json; print(json.load(open("'"$OUT/job.json"'"))["state"])')
    case "$STATE" in done|failed|cancelled) break ;; esac
    if python3 -c "import sys, time; sys.exit(time.time() - $START < ${DEADLINE:-270})"; then
        echo "deadline of ${DEADLINE:-270} s reached: cancelling job $JOB"
        curl -s -X POST -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/cancel/" >/dev/null
        sleep 5
        curl -s -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/" >"$OUT/job.json"
        STATE="cancelled at the deadline"
        break
    fi
    sleep 1
done
END=$(date +%s.%N)
curl -s -H "Authorization: Token $KEY" "$API/network-jobs/$JOB/best.log" >"$OUT/best.log"
kill -INT $UP; wait $UP

python3 - "$OUT" "$JOB" "$STATE" "$START" "$END" "$GPUS" <<'PY' | tee "$OUT/summary.txt"
import json, sys
out, job_id, state, start, end, gpus = sys.argv[1:]
job = json.load(open(f"{out}/job.json"))
us = lambda s: f"{s * 1e6:.1f}" if s else "—"
for gpu in job["gpus"]:
    with open(f"{out}/timeline.tsv", "w") as tsv:
        tsv.write("trials\tseconds\testimate_us\n")
        for p in gpu["timeline"]:
            tsv.write(f"{p['trials']}\t{p['seconds']:.2f}\t{p['estimate'] * 1e6:.2f}\n")
    workers = sorted({t["worker"] for t in gpu["tasks"] if t["worker"]})
    print(f"network job {job_id} (resnet18, {job['tuner']}, {job['n_trial']} trials, rounds of {job['round_trials']},"
          f" {job['allocation']}): {state} in {float(end) - float(start):.1f} s wall on {gpus} GPU(s), workers: {', '.join(workers)}")
    print(f"estimated network time {us(gpu['estimate'])} µs, cuDNN {us(gpu['vendor_estimate'])} µs"
          f" ({gpu['speedup'] or 0:.2f}× the vendor's speed); {gpu['trials_done']} trials stored of {gpu['trials_allotted']} given")
    print(f"{'task':<5} {'×':>2} {'trials':>6} {'best µs':>8} {'cuDNN µs':>8} {'speedup':>7} {'share':>6}  state / worker")
    for t in gpu["tasks"]:
        share = f"{t['network_share'] * 100:.1f}%" if t["network_share"] else "—"
        speed = f"{t['speedup']:.2f}" if t["speedup"] else "—"
        print(f"{t['label']:<5} {t['weight']:>2} {t['trials_done']:>6} {us(t['best_cost']):>8} {us(t['vendor_cost']):>8}"
              f" {speed:>7} {share:>6}  {t['state']} / {t['worker'] or ''} {t['message']}")
PY
echo "best-config log lines: $(grep -vc '^#' "$OUT/best.log")"
