"""The training step every single-device baseline shares: softmax cross-entropy on the
training rows, autograd, torch.optim. Subclasses provide ``forward()`` and ``weight_grads()``."""

from __future__ import annotations


class AutogradTrainer:
    optimizer = None
    train_rows = None
    train_labels = None
    _loss = None

    def load_inputs(self, graph, model) -> None:
        """The features, the labelled training rows and the layer widths, on ``self.device``."""
        import numpy as np
        import torch

        self.X = torch.from_numpy(np.asarray(graph.features, dtype=np.float32)).to(self.device)
        labels = np.asarray(graph.labels)
        train = np.asarray(graph.train_idx)
        train = train[labels[train] >= 0]
        self.train_rows = torch.from_numpy(train.astype(np.int64)).to(self.device)
        self.train_labels = torch.from_numpy(labels[train].astype(np.int64)).to(self.device)
        self.dims = model.dims(graph.feature_dim, graph.num_classes)

    def forward(self):
        raise NotImplementedError

    def weight_grads(self) -> list:
        """Weight gradients in the engine's (in_dim, out_dim) layout, for equality tests."""
        raise NotImplementedError

    def loss(self, logits):
        import torch.nn.functional as F

        return F.cross_entropy(logits.index_select(0, self.train_rows), self.train_labels)

    def _backward(self):
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.forward()
        loss = self.loss(logits)
        loss.backward()
        self._loss = loss.detach()
        return logits

    def train_epoch(self) -> None:
        self._backward()
        self.optimizer.step()

    def compute_gradients(self):
        logits = self._backward()
        return self.loss_value(), logits.detach().clone(), [g.detach().clone() for g in self.weight_grads()]

    def loss_value(self) -> float:
        return float(self._loss)
