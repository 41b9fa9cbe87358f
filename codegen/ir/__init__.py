from .graph import Declared, Graph, Node, QParams, Tensor

__all__ = ["Declared", "Graph", "Node", "QParams", "Tensor"]
