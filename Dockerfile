# syntax=docker/dockerfile:1
# One image for every pilotta-arena process: `arena api`, `arena worker`, `arena web`, `referee`, and the
# sample bots (Python ones with `python -m sample_bots.<name>`, the Node one with `node sample_bots/node/bot.js`).
#
#   docker build -t pilotta-arena .
#   docker run --rm pilotta-arena --help
#   docker compose -f deploy/docker-compose.yml up --build

ARG PYTHON_IMAGE=python:3.11-slim

# --- Node dependencies of the Node sample bot, built with npm (which the runtime image does not need).
FROM ${PYTHON_IMAGE} AS node-deps
RUN apt-get update \
    && apt-get install -y --no-install-recommends nodejs npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src/sample_bots/node
COPY sample_bots/ /src/sample_bots/
RUN if [ -f package-lock.json ]; then npm ci --omit=dev --no-audit --no-fund; \
    elif [ -f package.json ]; then npm install --omit=dev --no-audit --no-fund; \
    fi \
    && mkdir -p node_modules

# --- Runtime image.
FROM ${PYTHON_IMAGE}

# PYTHONPATH: the source tree is importable too, for what `pip install .` doesn't install (sample_bots,
# proto). PILOTTA_METRICS_ADDR: metrics endpoints listen on all interfaces so Prometheus in another
# container can scrape them (see arena/metrics/exposition.py; they default to loopback outside the image).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    PILOTTA_METRICS_ADDR=0.0.0.0

# Node.js runtime only (Debian's, the same build as in the node-deps stage).
RUN apt-get update \
    && apt-get install -y --no-install-recommends nodejs \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, in their own layer: rebuilt only when pyproject.toml changes. The stub packages let
# setuptools resolve the project without the sources; they are replaced below.
COPY pyproject.toml README.md* ./
RUN mkdir -p arena referee \
    && touch arena/__init__.py referee/__init__.py \
    && pip install . \
    && pip uninstall -y pilotta-arena \
    && rm -rf arena referee build *.egg-info

COPY . .
RUN pip install --no-deps . \
    && rm -rf build *.egg-info
COPY --from=node-deps /src/sample_bots/node/node_modules /app/sample_bots/node/node_modules

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin arena \
    && mkdir /archive && chown arena /archive
# /archive: the archive of finished matches' records (a volume in deploy/; a new named volume takes this
# directory's owner, so the archiver, running as arena, can write it).
USER arena

# 50051 arena API gRPC, 50052 worker gRPC health, 8080 web, 9100/9101 metrics, 50061-50063 sample bots.
EXPOSE 50051 50052 8080 9100 9101 50061 50062 50063

ENTRYPOINT ["arena"]
CMD ["--help"]
