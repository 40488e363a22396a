# A GPT-2 language model from the transformers library, built from a small config (no download),
# trained a few AdamW steps on random tokens. --leak keeps every step's per-token loss on the device.
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

leak = "--leak" in sys.argv
torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_head=4, n_embd=256, vocab_size=8192, n_positions=256)
model = GPT2LMHeadModel(config).cuda().train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
tokens = torch.randint(0, config.vocab_size, (8, 128), device="cuda")
kept = []
for step in range(20):
    optimizer.zero_grad(set_to_none=True)
    outputs = model(input_ids=tokens, labels=tokens)
    outputs.loss.backward()
    optimizer.step()
    if leak:
        kept.append(outputs.logits.detach().mean(dim=-1))  # @leak
torch.cuda.synchronize()
print("result: gpt2, %d steps, loss finite %s, kept %d" % (20, bool(torch.isfinite(outputs.loss)), len(kept)))
