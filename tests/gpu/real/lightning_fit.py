# A PyTorch Lightning fit loop (Trainer on one GPU, no logger, no checkpoints): a small regression
# model over a CPU dataset, two epochs. --leak keeps every training step's loss on the device.
import sys

import pytorch_lightning as pl
import torch

leak = "--leak" in sys.argv


class Regression(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
        self.kept = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        if leak:
            self.kept.append(loss.detach() * 1.0)  # @leak
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
x = torch.randn(4096, 64)
data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
loader = torch.utils.data.DataLoader(data, batch_size=128)
model = Regression()
trainer = pl.Trainer(max_epochs=2, accelerator="gpu", devices=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, loader)
print("result: lightning, %d epochs, kept %d" % (trainer.current_epoch, len(model.kept)))
