# syntax=docker/dockerfile:1
#
# inferd container images.
#
#   docker build -t inferd:gpu .                            # CUDA + cuDNN (the default, last stage)
#   docker build -t inferd:cpu --target cpu .               # CPU only, plain Debian 12
#   docker build -t inferd-loadgen --target loadgen .       # the load generator, with Fashion-MNIST
#
#   docker run --gpus all -p 8000:8000 inferd:gpu
#   docker run -p 8000:8000 -v "$PWD/my_repository:/models:ro" inferd:cpu
#
# The CUDA stages use NVIDIA's CUDA 12.6 update 3 images with cuDNN 9 (which
# inferd opens at run time as libcudnn.so.9), not the CUDA 13 toolkit the
# project is developed with: a CUDA 13 runtime needs an R580 or newer driver,
# while a CUDA 12.x runtime runs on any R525.60.13+ driver (R535, R550, R570,
# R580 and later included) through CUDA's minor-version compatibility. That
# holds because nothing needs the driver to compile PTX: the fat binary
# carries SASS for each supported GPU (sm_75, 80, 86, 89, 90; CUDA_ARCHS in
# mk/build.mk), cudart is linked statically, and with a 12.x nvcc
# mk/build.mk compresses with -Xfatbin=-compress-all, which every CUDA 12
# driver reads (not --compress-mode=size, which would need R550). A GPU newer
# than sm_90 needs a driver that knows it (R570+) and compiles the sm_90
# PTX. The GPU image needs the NVIDIA driver and the NVIDIA Container
# Toolkit on the host (README, "Deploying").
#
# Every image serves the models it ships from /models; mount a repository
# there to serve others. It listens on 0.0.0.0:8000 as the unprivileged user
# 10001 and reports its health on GET /v2/health/ready.

# 12.x keeps the R525/R535 floor; --build-arg CUDA_VERSION=13.0.2 builds
# on the toolkit used here instead (then the host needs R580+).
ARG CUDA_VERSION=12.6.3
ARG UBUNTU_VERSION=24.04
ARG DEBIAN_VERSION=bookworm

# Both build stages run this: the three programs, and the list of packages
# their shared libraries come from (deploy/runtime-debs.sh), which the
# runtime stage installs. Release images build without -Werror, so that a
# newer compiler's new warning cannot break an image build; `make test`
# keeps -Werror.

# ------------------------------------------------------------ CPU build
FROM debian:${DEBIAN_VERSION} AS cpu-build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make pkg-config binutils \
      zlib1g-dev libpng-dev libjpeg-dev libwebp-dev libcjson-dev libmicrohttpd-dev libcurl4-openssl-dev \
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make CUDA=0 WARN="-Wall -Wextra -Wno-unused-parameter -Wno-format-truncation" -j"$(nproc)" \
      build/inferd build/inferctl build/inferd-loadgen \
 && deploy/runtime-debs.sh build/inferd build/inferctl build/inferd-loadgen > build/runtime-debs

# ------------------------------------------------------------ CPU image
FROM debian:${DEBIAN_VERSION}-slim AS cpu
COPY --from=cpu-build /src/build/runtime-debs /tmp/runtime-debs
# hadolint ignore=SC2046
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      curl $(cat /tmp/runtime-debs) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-debs \
 && groupadd --system --gid 10001 inferd \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin inferd
COPY --from=cpu-build /src/build/inferd /src/build/inferctl /src/build/inferd-loadgen /usr/local/bin/
COPY --from=cpu-build /src/model_repository /models
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8000/v2/health/ready"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["inferd"]
CMD ["--model-repository", "/models", "--host", "0.0.0.0", "--http-port", "8000", "--backend", "cpu"]

# ------------------------------------------------------------ load generator
# The CPU image plus Debian's Fashion-MNIST test set, the load generator's
# default requests (docker-compose.yml's loadgen service).
FROM cpu AS loadgen
USER 0:0
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/*
USER 10001:10001
HEALTHCHECK NONE
ENTRYPOINT ["inferd-loadgen"]
CMD ["--url", "http://inferd:8000", "--concurrency", "16", "--duration", "30", "--no-progress"]

# ------------------------------------------------------------ onnx.proto
# The ONNX loader's C code is generated from the onnx.proto of Debian's
# libonnx-dev (mk/build.mk: ONNX_PROTO). The Ubuntu build below takes the same
# file from Debian 12, so both images parse ONNX exactly as the tested build.
FROM debian:${DEBIAN_VERSION}-slim AS onnx-proto
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libonnx-dev \
 && rm -rf /var/lib/apt/lists/*

# ------------------------------------------------------------ CUDA build
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION} AS cuda-build
# Ubuntu's names: libjpeg-dev is libjpeg-turbo8-dev there (libjpeg62-turbo-dev on Debian).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc g++ libc6-dev make pkg-config binutils \
      zlib1g-dev libpng-dev libjpeg-dev libwebp-dev libcjson-dev libmicrohttpd-dev libcurl4-openssl-dev \
      libprotobuf-c-dev protobuf-c-compiler \
 && rm -rf /var/lib/apt/lists/*
COPY --from=onnx-proto /usr/include/onnx/onnx.proto /usr/include/onnx/onnx.proto
WORKDIR /src
COPY . .
RUN make CUDA=1 WARN="-Wall -Wextra -Wno-unused-parameter -Wno-format-truncation" -j"$(nproc)" \
      build/inferd build/inferctl build/inferd-loadgen \
 && deploy/runtime-debs.sh build/inferd build/inferctl build/inferd-loadgen > build/runtime-debs

# ------------------------------------------------------------ GPU image (default)
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION} AS gpu
COPY --from=cuda-build /src/build/runtime-debs /tmp/runtime-debs
# hadolint ignore=SC2046
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      curl $(cat /tmp/runtime-debs) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-debs \
 && groupadd --system --gid 10001 inferd \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin inferd
COPY --from=cuda-build /src/build/inferd /src/build/inferctl /src/build/inferd-loadgen /usr/local/bin/
COPY --from=cuda-build /src/model_repository /models
# The base image sets NVIDIA_DRIVER_CAPABILITIES=compute,utility: the NVIDIA
# Container Toolkit mounts the driver's CUDA libraries and nvidia-smi.
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8000/v2/health/ready"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["inferd"]
CMD ["--model-repository", "/models", "--host", "0.0.0.0", "--http-port", "8000", "--backend", "auto"]
