"""Fit y = 3x + 1 with torch and log the loss to the MLflow run air created for this attempt."""

import os

import mlflow
import torch

steps = int(os.environ.get("STEPS", "50"))
torch.manual_seed(0)
x = torch.rand(256, 1)
y = 3 * x + 1
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"]):
    for step in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        mlflow.log_metric("train_loss", loss.item(), step=step)
    print(f"final loss {loss.item():.4f}, weight {model.weight.item():.2f}, bias {model.bias.item():.2f}")
