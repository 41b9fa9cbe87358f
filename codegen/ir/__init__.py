from .graph import Graph, Node, QParams, Tensor

__all__ = ["Graph", "Node", "QParams", "Tensor"]
