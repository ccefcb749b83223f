# culturekb on CPU: the CLI and the retrieval API (`culturekb serve`), offline by default.
#
#   docker build -t culturekb .
#   docker run --rm culturekb --version
#   docker run --rm -v "$PWD/work:/data" culturekb build /data/train.csv --out /data/kb
#   docker run --rm -p 8000:8000 -v "$PWD/work:/data" culturekb serve --kb /data/kb --host 0.0.0.0 --port 8000
#
# Build arguments: EXTRAS (the optional parts to install; default retrieval,api,reports) and TORCH_INDEX_URL
# (where a CPU-only torch wheel comes from; the default index's torch carries CUDA libraries of several GB).
# The default embedder (all-MiniLM-L6-v2, numpy runtime) needs no torch; sentence-transformers, which the
# retrieval extra brings, does.
FROM python:3.11-slim

ARG EXTRAS=retrieval,api,reports
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    XDG_CACHE_HOME=/cache

WORKDIR /src

# torch first, CPU build, if that index resolves one for this platform; otherwise pip takes PyPI's below
RUN pip install --index-url "$TORCH_INDEX_URL" "torch<=2.14.1" \
    || echo "no CPU-only torch wheel resolved from $TORCH_INDEX_URL; the default one will be installed"

# the package (sources, prompts, languages, demo data) and its metadata; tests and benchmarks stay out
COPY pyproject.toml README.md CHANGELOG.md DATA_NOTICE.md ./
COPY culturekb ./culturekb
RUN pip install ".[${EXTRAS}]" \
    && culturekb --version

# an unprivileged user; KBs and reports go to /data, caches to /cache (XDG_CACHE_HOME)
RUN useradd --create-home --uid 1000 culturekb \
    && mkdir -p /data /cache \
    && chown culturekb:culturekb /data /cache
USER culturekb
WORKDIR /data
VOLUME ["/data", "/cache"]
EXPOSE 8000

ENTRYPOINT ["culturekb"]
CMD ["--help"]
