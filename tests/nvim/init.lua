-- Minimal Neovim config for tests/nvim: only torchscope's plugin, started with the test's
-- interpreter on the worktree's server (TORCHSCOPE_NVIM_* set by test_neovim.py).
vim.cmd("filetype on")
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
local plugin = dofile(vim.env.TORCHSCOPE_NVIM_PLUGIN)
package.loaded["torchscope"] = plugin -- drive.lua asks it for the client
plugin.setup({
  python = vim.env.TORCHSCOPE_NVIM_PYTHON,
  settings = { steps = 3, warmup = 1, trace_dir = vim.env.TORCHSCOPE_NVIM_TRACES },
})
