"""Train a Fashion-MNIST classifier on the CPU and export it for inferd.

    /usr/bin/python3 models/train.py --model lenet5 --out model_repository/lenet5
    /usr/bin/python3 models/train.py --model resnet-mini --out model_repository/resnet-mini

Deterministic: fixed seeds, a fixed data order (numpy Generator seeded per
run), 2 threads. The trained state_dict goes to /tmp/inferd-models/<name>.pt
(--save to change; never committed), then models/export.py writes the model
folder and tests/data/<name>.fixture.safetensors.
"""

import argparse
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import export  # noqa: E402
import fashion_mnist as fm  # noqa: E402
import nets  # noqa: E402

# Per-model recipe. Tuned for ~2 CPU cores.
RECIPES = {
    "lenet5": dict(
        epochs=24, batch_size=128, optimizer="adamw", lr=3e-3, weight_decay=5e-4,
        flip=True, crop=0, label_smoothing=0.0,
    ),
    "resnet-mini": dict(
        epochs=30, batch_size=128, optimizer="sgd", lr=0.1, weight_decay=5e-4,
        flip=True, crop=2, label_smoothing=0.0,
    ),
}


def augment(images, rng, flip, crop):
    """uint8 [B,28,28] -> uint8 [B,28,28]: random horizontal flip, random crop with zero padding."""
    b, h, w = images.shape
    out = images
    if flip:
        mask = rng.random(b) < 0.5
        out = out.copy()
        out[mask] = out[mask][:, :, ::-1]
    if crop:
        padded = np.zeros((b, h + 2 * crop, w + 2 * crop), dtype=np.uint8)
        padded[:, crop:crop + h, crop:crop + w] = out
        dy = rng.integers(0, 2 * crop + 1, size=b)
        dx = rng.integers(0, 2 * crop + 1, size=b)
        rows = dy[:, None] + np.arange(h)[None, :]
        cols = dx[:, None] + np.arange(w)[None, :]
        out = padded[np.arange(b)[:, None, None], rows[:, :, None], cols[:, None, :]]
    return out


def param_groups(model, weight_decay):
    """No weight decay on biases and BatchNorm parameters."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


@torch.no_grad()
def evaluate(model, images, labels, batch=1000):
    model.eval()
    correct = 0
    for i in range(0, len(images), batch):
        x = torch.from_numpy(fm.normalize(images[i:i + batch]))
        pred = model(x).argmax(1).numpy()
        correct += int((pred == labels[i:i + batch]).sum())
    return correct / len(images)


def fmt_time(s):
    return f"{int(s // 60)}m{int(s % 60):02d}s" if s >= 60 else f"{s:.1f}s"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(RECIPES))
    ap.add_argument("--out", required=True, help="model folder, e.g. model_repository/lenet5")
    ap.add_argument("--epochs", type=int, help="override the recipe's epoch count")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save", help="where to save the state_dict (default /tmp/inferd-models/<name>.pt)")
    ap.add_argument("--fixture-dir", default=export.DEFAULT_FIXTURE_DIR)
    ap.add_argument("--time-batches", type=int, default=0,
                    help="only time this many training batches, then exit (no export)")
    args = ap.parse_args(argv)

    recipe = dict(RECIPES[args.model])
    if args.epochs is not None:
        if args.epochs < 1:
            ap.error("--epochs must be >= 1")
        recipe["epochs"] = args.epochs
    name = os.path.basename(os.path.normpath(args.out))
    save = args.save or os.path.join("/tmp/inferd-models", f"{name}.pt")

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    train_x, train_y = fm.load_split("train")
    test_x, test_y = fm.load_split("test")
    train_y_t = torch.from_numpy(train_y.astype(np.int64))

    model = nets.build(args.model)
    nparams = sum(p.numel() for p in model.parameters())
    epochs, bs = recipe["epochs"], recipe["batch_size"]
    steps_per_epoch = math.ceil(len(train_x) / bs)
    total_steps = epochs * steps_per_epoch

    groups = param_groups(model, recipe["weight_decay"])
    if recipe["optimizer"] == "sgd":
        opt = torch.optim.SGD(groups, lr=recipe["lr"], momentum=0.9, nesterov=True)
    else:
        opt = torch.optim.AdamW(groups, lr=recipe["lr"])
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=recipe["lr"], total_steps=total_steps, pct_start=0.25,
        div_factor=20.0, final_div_factor=200.0, anneal_strategy="cos")

    tty = sys.stdout.isatty()
    print(f"{args.model} -> {args.out}: {nparams} parameters, {epochs} epochs x "
          f"{steps_per_epoch} steps, batch {bs}, {recipe['optimizer']} lr {recipe['lr']} "
          f"wd {recipe['weight_decay']}, flip={recipe['flip']} crop={recipe['crop']}, "
          f"{args.threads} threads", flush=True)

    t_start = time.time()
    for epoch in range(1, epochs + 1):
        model.train()
        perm = rng.permutation(len(train_x))
        t0 = time.time()
        loss_sum, correct, seen = 0.0, 0, 0
        for step in range(steps_per_epoch):
            idx = perm[step * bs:(step + 1) * bs]
            imgs = augment(train_x[idx], rng, recipe["flip"], recipe["crop"])
            x = torch.from_numpy(fm.normalize(imgs))
            y = train_y_t[idx]
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=recipe["label_smoothing"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            n = len(idx)
            loss_sum += loss.item() * n
            correct += int((logits.argmax(1) == y).sum())
            seen += n
            if args.time_batches and step + 1 >= args.time_batches:
                dt = time.time() - t0
                print(f"timed {step + 1} batches: {dt:.1f}s, {seen / dt:.0f} img/s, "
                      f"epoch ~{steps_per_epoch * dt / (step + 1):.0f}s (+ eval)")
                return
            if tty and (step % 10 == 0 or step + 1 == steps_per_epoch):
                dt = time.time() - t0
                sys.stdout.write(
                    f"\r  epoch {epoch}/{epochs} [{step + 1}/{steps_per_epoch}] "
                    f"loss {loss_sum / seen:.4f} acc {100 * correct / seen:.2f}% "
                    f"{seen / max(dt, 1e-9):.0f} img/s ")
                sys.stdout.flush()
        train_time = time.time() - t0
        test_acc = evaluate(model, test_x, test_y)
        if tty:
            sys.stdout.write("\r\033[K")
        print(f"epoch {epoch:2d}/{epochs} loss {loss_sum / seen:.4f} "
              f"train {100 * correct / seen:.2f}% test {100 * test_acc:.2f}% "
              f"lr {sched.get_last_lr()[0]:.2e} {seen / train_time:.0f} img/s "
              f"epoch {fmt_time(time.time() - t0)} total {fmt_time(time.time() - t_start)}",
              flush=True)

    os.makedirs(os.path.dirname(os.path.abspath(save)), exist_ok=True)
    torch.save(model.state_dict(), save)
    print(f"trained in {fmt_time(time.time() - t_start)}; state_dict saved to {save}")
    export.export(model, args.model, args.out, args.fixture_dir, name=name)


if __name__ == "__main__":
    main()
