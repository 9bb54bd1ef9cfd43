# mk/peers.mk - make bench-peers: inferd against onnxruntime and OpenVINO on
# the CPU, FP32 and INT8, on the four models (models/bench_peers.py; results
# in docs/performance.md). Takes minutes, so it is no part of make test.
#
# The peers come from PyPI, pinned, into a virtual environment made from
# Debian's python3 with --system-site-packages (Debian's torch, numpy and
# PIL export the models and draw the inputs; numpy~=1.0 keeps Debian's 1.x,
# which that torch is built against). The venv is remade when the pins change.
# Where PyPI cannot be reached the target prints SKIPPED with the reason and
# succeeds. PEERS_ARGS passes options: make bench-peers PEERS_ARGS=--quick
.PHONY: bench-peers bench-onnx-exports
PEERS_VENV := $(BUILD)/peers-venv
PEERS_PIP  := onnxruntime==1.32.0 openvino==2026.4.1 onnx==1.21.0 numpy~=1.0
PEERS_ARGS ?=

# The start of a recipe line: (re)makes $(PEERS_VENV) when its pins
# differ; where PyPI cannot be reached it prints SKIPPED (with $(1), the
# target) and ends the line with success.
define peers_venv
if [ "$$(cat $(PEERS_VENV)/pins 2>/dev/null)" != '$(PEERS_PIP)' ]; then \
  if ! why=$$($(PYTHON) -m pip index versions onnxruntime --timeout 15 --retries 1 2>&1 >/dev/null); then \
    echo "$(1): SKIPPED: PyPI cannot be reached to install onnxruntime and openvino ($$(echo "$$why" | tail -1))"; \
    exit 0; \
  fi; \
  echo "$(1): installing $(PEERS_PIP) into $(PEERS_VENV)"; \
  rm -rf $(PEERS_VENV) && $(PYTHON) -m venv --system-site-packages $(PEERS_VENV) && \
  $(PEERS_VENV)/bin/pip install -q $(PEERS_PIP) && echo '$(PEERS_PIP)' > $(PEERS_VENV)/pins || exit 1; \
fi
endef

bench-peers: deps deps-python deps-peers $(BUILD)/bench_peer_inferd $(BUILD)/inferctl
	@ls $(IMAGENET_FILES) >/dev/null 2>&1 || $(MAKE) --no-print-directory models-imagenet
	@$(call peers_venv,bench-peers); \
	$(PEERS_VENV)/bin/python models/bench_peers.py $(PEERS_ARGS)

# PyTorch's exports (make test-onnx-exports) against onnxruntime, batch 1
# (tests/bench/bench_onnx_exports.py; results in docs/performance.md).
bench-onnx-exports: deps deps-python deps-peers $(BUILD)/bench_peer_inferd $(BUILD)/onnx-suite
	@ls $(BUILD)/onnx-exports/convnext_tiny/model.onnx >/dev/null 2>&1 || \
	  $(MAKE) --no-print-directory test-onnx-exports
	@$(call peers_venv,bench-onnx-exports); \
	$(PEERS_VENV)/bin/python tests/bench/bench_onnx_exports.py --build $(BUILD)
