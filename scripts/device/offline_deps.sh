# Sourced by the device scripts. The device has no package registry, so what its image lacks
# travels in two ignored folders of the repository root (carry=[".whl", ".debs"]):
#   .whl/   Python 3.12 wheels of tunerweb's runtime dependencies the image does not hold,
#           installed under $SITE (/tmp/site) ahead of the image's own packages. Fetch them here with
#           python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#             --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#             -d .whl $(grep -v "^#" scripts/device/wheels.txt)
#   .debs/  Debian's redis-server and what it links that the image lacks, unpacked under $REDIS_DIR
#           (/tmp/redis): (cd .debs && apt-get download redis-server redis-tools libjemalloc2 liblzf1)
# Only redis-server sees the unpacked libraries (a wrapper sets LD_LIBRARY_PATH for it alone),
# so CUDA's libraries resolve as the image has them.
SITE=${SITE:-/tmp/site} REDIS_DIR=${REDIS_DIR:-/tmp/redis}
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        && export PYTHONPATH=$SITE:$PWD || exit 1
fi
if [ -d .debs ] && ! command -v redis-server >/dev/null; then
    mkdir -p "$REDIS_DIR/bin" && for f in .debs/*.deb; do dpkg -x "$f" "$REDIS_DIR"; done
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/usr/lib/x86_64-linux-gnu exec %s/usr/bin/redis-server "$@"\n' \
        "$REDIS_DIR" "$REDIS_DIR" >"$REDIS_DIR/bin/redis-server"
    chmod +x "$REDIS_DIR/bin/redis-server"
    export PATH=$REDIS_DIR/bin:$PATH
fi
