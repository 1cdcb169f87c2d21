# Sourced by the device scripts: $OUT made, the carried wheels (.whl/: xgboost-cpu) installed
# beside the device image's packages, unbuffered output, TF32 off, a kernel cache in /tmp.
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site || exit 1
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
