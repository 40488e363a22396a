# torchvision's ResNet-50 (weights=None: nothing downloaded), a few SGD training steps on random
# images. With --leak, every step's predictions stay in a list on the device (the planted leak,
# marked @leak): cuaudit must find it at that line, and nothing else in either run.
import sys

import torch
import torchvision

leak = "--leak" in sys.argv
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).cuda().train()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.randn(16, 3, 224, 224, device="cuda")
labels = torch.randint(0, 1000, (16,), device="cuda")
kept = []
for step in range(24):
    optimizer.zero_grad(set_to_none=True)
    output = model(images)
    loss = torch.nn.functional.cross_entropy(output, labels)
    loss.backward()
    optimizer.step()
    if leak:
        kept.append(torch.softmax(output.detach(), dim=1))  # @leak
torch.cuda.synchronize()
print("result: resnet50, %d steps, loss finite %s, kept %d" % (24, bool(torch.isfinite(loss)), len(kept)))
