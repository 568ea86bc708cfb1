"""OneModel's basic ops: elementwise math, matmul, shape ops, reductions and indexing."""
