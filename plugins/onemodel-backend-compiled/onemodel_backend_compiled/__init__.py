"""onemodel-backend-compiled: the "compiled" backend (native packed kernels, one C call per run)."""
