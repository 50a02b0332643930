# One image for every pilotta-arena process: `arena api`, `arena worker`, `arena web`, `arena archive`,
# `referee`, the sample bots (`python -m sample_bots.<name>`, `node sample_bots/node/bot.js`), and the
# compose stack's Redis and Prometheus (Debian's, in the base image).
#
#   make image        # deploy/docker/image.sh: the base, the wheelhouse, then this build
#
# Built with no registry and no network: FROM the base that deploy/docker/base.sh makes with debootstrap
# from Debian's packages (Python, bubblewrap, Node.js, Redis, Prometheus), with the Python packages from
# the wheelhouse deploy/docker/image.sh prepares on the host with pip (deploy/docker/build/, git-ignored).
# No parser directive (`# syntax=`) on purpose: BuildKit would fetch that frontend from a registry.

ARG BASE_IMAGE=pilotta-arena-base:bookworm
FROM ${BASE_IMAGE}

# PYTHONPATH: the source tree is importable too, for what `pip install .` doesn't install (sample_bots'
# SDK and the proto tree, which the sandbox copies into each instance: arena/sandbox/bwrap.py). PIP_NO_INDEX:
# the wheelhouse only. PILOTTA_METRICS_ADDR: metrics endpoints listen on all interfaces so Prometheus in
# another container can scrape them (they default to loopback outside the image).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_NO_INDEX=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    VIRTUAL_ENV=/opt/arena \
    PATH=/opt/arena/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PILOTTA_METRICS_ADDR=0.0.0.0

# Dependencies first, in their own layer: rebuilt only when the wheelhouse (pyproject.toml's dependencies)
# changes. `python` is the venv's (the sample bots' and health checks' command lines say `python`).
COPY deploy/docker/build/wheels/ /wheels/
RUN python3 -m venv /opt/arena \
    && pip install --find-links /wheels -r /wheels/requirements.txt

# The project: only what runs (no tests, docs, deploy files), then installed for its entry points.
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proto/ proto/
COPY referee/ referee/
COPY arena/ arena/
COPY sample_bots/ sample_bots/
COPY deploy/docker/build/node_modules/ sample_bots/node/node_modules/
RUN pip install --find-links /wheels --no-deps . \
    && rm -rf build *.egg-info

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin arena \
    && mkdir /archive /var/lib/arena && chown arena /archive /var/lib/arena
# /archive: the archive of finished matches' records (a volume in deploy/; a new named volume takes this
# directory's owner, so the archiver, running as arena, can write it). /var/lib/arena: Redis's and
# Prometheus's data when they run from this image (their volumes).
USER arena

# 50051 arena API gRPC, 50052 worker gRPC health, 8080 web, 9100/9101 metrics, 50061-50063 sample bots.
EXPOSE 50051 50052 8080 9100 9101 50061 50062 50063

ENTRYPOINT ["arena"]
CMD ["--help"]
