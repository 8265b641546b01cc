"""The e2e's memory case: the **Profile memory** lens on `grow` must put a memory inlay hint
(`+2.1 MB · 3 allocs`: the 2 MiB output and two small blocks) on the line that allocates it."""



# torchscope: grow(torch.randn(512, 1024))
def grow(x):
    doubled = x * 2.0
    return float(doubled.sum())
