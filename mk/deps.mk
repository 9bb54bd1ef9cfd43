# mk/deps.mk - the Debian packages each part needs, and the deps* targets
# that install those missing (apt-get, with sudo when not root).
.PHONY: deps deps-python deps-peers deps-client deps-wrk deps-ui deps-bundle deps-deploy deps-fuzz deps-lint deps-emu

# The build and the tests (tests/deploy/test_deploy.py checks that the
# Dockerfile's build stages install DEBS too).
DEBS        := gcc make pkg-config zlib1g-dev libpng-dev libjpeg62-turbo-dev libwebp-dev libcjson-dev \
               libmicrohttpd-dev libcurl4-openssl-dev dataset-fashion-mnist curl \
               libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
DEBS_PYTHON := python3-torch python3-numpy python3-onnx python3-torchvision python3-pil
DEBS_PEERS  := python3-venv python3-pip  # bench-peers: its venv, and pip to reach PyPI
DEBS_CLIENT := gnuplot-nox python3  # loadgen --sweep plots, the Python example (both tested)
DEBS_WRK    := wrk            # bench-loadgen's yardstick
DEBS_UI     := chromium chromium-driver  # the web page's browser test (tests/test_ui.c)
DEBS_BUNDLE := patchelf binutils
DEBS_DEPLOY := nginx docker-compose python3-venv python3-docker prometheus
DEBS_FUZZ   := clang libclang-rt-dev
DEBS_LINT   := clang-tidy cppcheck
DEBS_EMU    := libsimde-dev   # test-emulated-avx512: AVX-512 intrinsics in portable C
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
define install_debs
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef
deps:
	$(call install_debs,$(DEBS))
deps-python:
	$(call install_debs,$(DEBS_PYTHON))
deps-emu:
	$(call install_debs,$(DEBS_EMU))
deps-peers:
	$(call install_debs,$(DEBS_PEERS))
deps-client:
	$(call install_debs,$(DEBS_CLIENT))
deps-wrk:
	$(call install_debs,$(DEBS_WRK))
deps-ui:
	$(call install_debs,$(DEBS_UI))
deps-bundle:
	$(call install_debs,$(DEBS_BUNDLE))
deps-deploy:
	$(call install_debs,$(DEBS_DEPLOY))
deps-fuzz:
	$(call install_debs,$(DEBS_FUZZ))
deps-lint:
	$(call install_debs,$(DEBS_LINT))
