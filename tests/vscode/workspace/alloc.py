"""The e2e's memory case: the **Profile memory** lens on `grow` must put a memory inlay hint
(`+2.1 MB · 1 alloc`) on the line that allocates the 2 MiB temporary."""



# torchscope: grow(torch.randn(512, 1024))
def grow(x):
    doubled = x * 2.0
    return float(doubled.sum())
