# mk/models.mk - the shipped models retrained (make models) and the
# ImageNet-scale models generated (make models-imagenet).
.PHONY: models models-imagenet

models: deps-python
	$(PYTHON) models/train.py --model lenet5 --out model_repository/lenet5
	$(PYTHON) models/train.py --model resnet-mini --out model_repository/resnet-mini

# ImageNet-scale models: seeded random weights and their PyTorch fixtures,
# generated here (about 20 s), never committed (.gitignore).
IMAGENET_FILES := $(foreach m,resnet50 mobilenet_v2,model_repository/$(m)/model.json \
                    model_repository/$(m)/model.safetensors tests/data/$(m).fixture.safetensors)
models-imagenet: deps-python
	$(PYTHON) models/export_imagenet.py
