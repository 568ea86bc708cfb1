"""OneModel's numpy backend: kernels for the core's plan compiler."""
