"""A real model's training step on the GPU (forward, backward, optimizer step), built from its
configuration with random weights: nothing is downloaded (the GPU machines have no network).
  resnet50  torchvision's ResNet-50 (weights=None), batch 32 of 224x224 images, SGD
  bert      transformers' BERT-base for sequence classification (BertConfig()), batch 16 of 128 tokens, AdamW
Prints the mean time per step over the timed steps and the process's peak resident memory, as
torch_step.py does. Usage: model_step.py MODEL [STEPS]"""
import resource
import sys
import time

import torch

name = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
torch.manual_seed(0)
if name == "resnet50":
    import torchvision

    model = torchvision.models.resnet50(weights=None).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def loss():
        return loss_fn(model(x), y)
elif name == "bert":
    import transformers

    transformers.logging.set_verbosity_error()
    model = transformers.BertForSequenceClassification(transformers.BertConfig(num_labels=2)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, model.config.vocab_size, (16, 128), device="cuda")
    labels = torch.randint(0, 2, (16,), device="cuda")

    def loss():
        return model(input_ids=ids, labels=labels).loss
else:
    sys.exit("model_step.py: MODEL is resnet50 or bert, not %r" % name)
model.train()


def step():
    optimizer.zero_grad(set_to_none=True)
    loss().backward()
    optimizer.step()


for _ in range(5):  # warm-up: cuBLAS and cuDNN handles, the caching allocator's segments, autotuning
    step()
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(steps):
    step()
torch.cuda.synchronize()
ms = (time.perf_counter() - start) * 1e3 / steps
print("model_step %s: %d steps, %.4f ms per step" % (name, steps, ms))
print("max RSS %d KiB" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
