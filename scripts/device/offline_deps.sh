# Sourced by the device scripts: the device has no package registry, so the Python wheels
# come in .whl/ (installed under /tmp/site) and Debian's redis-server in .debs/ (unpacked
# under /tmp/redis); see job_e2e.sh for what the two folders hold.
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD || exit 1
fi
if [ -d .debs ] && ! command -v redis-server >/dev/null; then
    mkdir -p /tmp/redis && for f in .debs/*.deb; do dpkg -x "$f" /tmp/redis; done
    export PATH=/tmp/redis/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/redis/usr/lib/x86_64-linux-gnu
fi
