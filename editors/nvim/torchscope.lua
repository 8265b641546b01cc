-- torchscope for Neovim 0.7+: the torchscope language server on Python buffers, plus
--   :TorchscopeProfile [CALL]   profile the function under the cursor (torchscope.profile)
--   :TorchscopeCompare [CALL]   eager vs torch.compile for it (torchscope.compareCompile)
--   :TorchscopeClear            forget the results of this buffer (torchscope.clear)
-- The verdict arrives as a diagnostic on the `def` line, hovers come from vim.lsp.buf.hover(),
-- code lenses from vim.lsp.codelens (run one with vim.lsp.codelens.run()).
--
-- Use it from your init.lua, either by path:
--   dofile("/path/to/torchscope/editors/nvim/torchscope.lua").setup({ python = "/path/to/python" })
-- or copied to ~/.config/nvim/lua/torchscope.lua:
--   require("torchscope").setup({ python = ".venv/bin/python" })
-- `python` is the interpreter that has torch and torchscope installed (`python -m torchscope
-- serve` must work there); `cmd` replaces the whole server command; `settings` goes to the
-- server as initializationOptions.settings (steps, warmup, timeout_s, trace_dir, …).

local M = {}

local config = {
  python = "python3",
  cmd = nil,
  settings = {},
  root_markers = { "pyproject.toml", "setup.py", "setup.cfg", ".git" },
}
local clients = {} -- root_dir -> client id

local function notify(message, level)
  vim.notify("torchscope: " .. message, level or vim.log.levels.INFO)
end

local function root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = vim.fn.fnamemodify(name, ":p:h")
  for _, marker in ipairs(config.root_markers) do
    local file = vim.fn.findfile(marker, dir .. ";")
    if file ~= "" then
      return vim.fn.fnamemodify(file, ":p:h")
    end
    local folder = vim.fn.finddir(marker, dir .. ";")
    if folder ~= "" then
      return vim.fn.fnamemodify(folder, ":p:h:h") -- ":p" adds a trailing slash to a folder
    end
  end
  return dir
end

-- The torchscope client attached to this buffer, if any.
local function client_for(bufnr)
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == "torchscope" then
      return client
    end
  end
  return nil
end
M.client_for = client_for -- for your own mappings (and the tests)

local function refresh_lenses(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_call(bufnr, function()
      vim.lsp.codelens.refresh()
    end)
  end
end

-- Run one of the server's workspace/executeCommand commands for the function under the cursor
-- (or at `line`, 0-based), and report its outcome.
local function run_command(command, bufnr, line, call, what)
  local client = client_for(bufnr)
  if client == nil then
    notify("the language server is not attached to this buffer (is it a Python file?)",
      vim.log.levels.ERROR)
    return
  end
  local argument = { uri = vim.uri_from_bufnr(bufnr), line = line }
  if call ~= nil and call ~= "" then
    argument.call = call
  end
  notify(what .. "…")
  client.request("workspace/executeCommand", { command = command, arguments = { argument } },
    function(err, result)
      if err ~= nil then
        notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
      elseif result == nil or result.ok == false then
        local message = result and result.error or "failed"
        if type(message) == "table" then
          message = message.message or vim.inspect(message)
        end
        notify(tostring(message), vim.log.levels.ERROR)
      else
        local report = result.report or {}
        local compare = report.compare
        local headline = (compare and compare.verdict and compare.verdict.headline)
          or (report.verdict and report.verdict.headline) or "done"
        notify(headline)
      end
      refresh_lenses(bufnr)
    end, bufnr)
end

local function cursor_line()
  return vim.api.nvim_win_get_cursor(0)[1] - 1
end

-- Client-side commands the server's code lenses and code actions name (the VS Code extension
-- implements the same ids): each takes the argument object the server put in the lens.
local function register_client_commands()
  vim.lsp.commands["torchscope.profileFunction"] = function(command, ctx)
    local arg = command.arguments[1]
    run_command("torchscope.profile", ctx.bufnr, arg.line, nil, "profiling")
  end
  vim.lsp.commands["torchscope.compareWithCompile"] = function(command, ctx)
    local arg = command.arguments[1]
    run_command("torchscope.compareCompile", ctx.bufnr, arg.line, nil, "comparing with torch.compile")
  end
  vim.lsp.commands["torchscope.openTrace"] = function(command)
    local arg = command.arguments[1]
    local path = type(arg) == "table" and arg.path or arg
    vim.fn.setreg("+", path)
    notify("trace " .. path .. " (path copied); open it with: torchscope analyze '" .. path
      .. "' --open")
  end
end

local function start(bufnr)
  local root = root_dir(bufnr)
  local id = clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client({
      name = "torchscope",
      cmd = config.cmd or { config.python, "-m", "torchscope", "serve" },
      root_dir = root,
      init_options = { settings = config.settings },
      handlers = {
        -- Neovim 0.7 has no handler for these server requests; answer them so the server
        -- logs no error, and refresh the lenses ourselves.
        ["workspace/codeLens/refresh"] = function()
          refresh_lenses(vim.api.nvim_get_current_buf())
          return vim.NIL
        end,
        ["workspace/inlayHint/refresh"] = function()
          return vim.NIL
        end,
      },
    })
    if id == nil then
      notify("could not start " .. table.concat(config.cmd or { config.python }, " "),
        vim.log.levels.ERROR)
      return
    end
    clients[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

function M.setup(opts)
  config = vim.tbl_deep_extend("force", config, opts or {})
  register_client_commands()
  local group = vim.api.nvim_create_augroup("torchscope", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "python",
    callback = function(args)
      start(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
    group = group,
    pattern = "*.py",
    callback = function(args)
      if client_for(args.buf) ~= nil then
        refresh_lenses(args.buf)
      end
    end,
  })
  vim.api.nvim_create_user_command("TorchscopeProfile", function(args)
    run_command("torchscope.profile", vim.api.nvim_get_current_buf(), cursor_line(),
      args.args, "profiling")
  end, { nargs = "?", desc = "torchscope: profile the function under the cursor [CALL]" })
  vim.api.nvim_create_user_command("TorchscopeCompare", function(args)
    run_command("torchscope.compareCompile", vim.api.nvim_get_current_buf(), cursor_line(),
      args.args, "comparing with torch.compile")
  end, { nargs = "?", desc = "torchscope: eager vs torch.compile for the function [CALL]" })
  vim.api.nvim_create_user_command("TorchscopeClear", function()
    local client = client_for(vim.api.nvim_get_current_buf())
    if client ~= nil then
      client.request("workspace/executeCommand", {
        command = "torchscope.clear",
        arguments = { { uri = vim.uri_from_bufnr(0) } },
      }, function()
        refresh_lenses(vim.api.nvim_get_current_buf())
      end)
    end
  end, { desc = "torchscope: forget this buffer's results" })
  -- Buffers already open when setup() runs.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == "python" then
      start(bufnr)
    end
  end
end

return M
