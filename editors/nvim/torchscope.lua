-- torchscope for Neovim 0.7+: the torchscope language server on Python buffers, plus
--   :TorchscopeProfile [CALL]   profile the function under the cursor (torchscope.profile)
--   :TorchscopeCompare [CALL]   eager vs torch.compile for it (torchscope.compareCompile)
--   :TorchscopeClear            forget the results of this buffer (torchscope.clear)
--   :TorchscopeFix [ID]         measure a fix of the function (torchscope.tryFix): without ID,
--                               pick one of the "Try fix: … (measure)" code actions; a faster
--                               rewrite with the same outputs asks Apply / Discard, and Apply
--                               edits the buffer (undo with `u`)
--   :TorchscopeRun {cmd}        profile the function under the cursor on the arguments the
--                               program {cmd} passes it (torchscope.profileInRun), e.g.
--                               :TorchscopeRun python train.py --steps 5
--                               (--mode train|eval first: which calls to profile)
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

-- The torchscope client of the buffer, or nil after saying that none is attached.
local function attached(bufnr)
  local client = client_for(bufnr)
  if client == nil then
    notify("the language server is not attached to this buffer (is it a Python file?)",
      vim.log.levels.ERROR)
  end
  return client
end

-- Run one of the server's workspace/executeCommand commands for the function under the cursor
-- (or at `line`, 0-based), and report its outcome; `extra` goes into the argument object.
local function run_command(command, bufnr, line, call, what, extra)
  local client = attached(bufnr)
  if client == nil then
    return
  end
  local argument = vim.tbl_extend("force", { uri = vim.uri_from_bufnr(bufnr), line = line },
    extra or {})
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
        if report.run ~= nil then
          headline = headline .. " (" .. report.run.calls_seen .. " calls seen in the run)"
          if report.run.mode_note ~= nil and report.run.mode_note ~= "" then
            headline = headline .. "\n" .. report.run.mode_note
          end
        end
        notify(headline)
      end
      refresh_lenses(bufnr)
    end, bufnr)
end

-- Measure one fix (an id) of the function at `line` (0-based); the server asks Apply / Discard
-- itself (window/showMessageRequest) when the rewrite is faster with the same outputs.
local function try_fix(bufnr, line, fix)
  local client = attached(bufnr)
  if client == nil then
    return
  end
  notify("measuring fix " .. fix .. "…")
  local argument = { uri = vim.uri_from_bufnr(bufnr), line = line, fix = fix }
  client.request("workspace/executeCommand", { command = "torchscope.tryFix", arguments = { argument } },
    function(err, result)
      if err ~= nil then
        notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
      elseif result == nil or result.ok == false then
        notify(tostring(result and result.error or "failed"), vim.log.levels.ERROR)
      else
        local level = result.offered and vim.log.levels.INFO or vim.log.levels.WARN
        notify(fix .. ": " .. result.fix.message, level)
      end
    end, bufnr)
end

-- :TorchscopeFix without an id: the "Try fix: … (measure)" code actions at the cursor.
local function pick_fix(bufnr, line)
  local client = client_for(bufnr)
  if client == nil then
    return try_fix(bufnr, line, "")
  end
  local params = vim.lsp.util.make_range_params()
  params.context = { diagnostics = {} }
  client.request("textDocument/codeAction", params, function(err, actions)
    local fixes = {}
    for _, action in ipairs(err == nil and actions or {}) do
      local command = action.command
      if type(command) == "table" and command.command == "torchscope.tryFix" then
        table.insert(fixes, action)
      end
    end
    if #fixes == 0 then
      notify("no fix applies to the function under the cursor")
      return
    end
    vim.ui.select(fixes, {
      prompt = "torchscope: measure which fix?",
      format_item = function(action) return action.title end,
    }, function(action)
      if action ~= nil then
        local arg = action.command.arguments[1]
        try_fix(bufnr, arg.line, arg.fix)
      end
    end)
  end, bufnr)
end

-- Apply / Discard after a measured fix: the choice through vim.ui.select (waited for, so an
-- asynchronous vim.ui.select works too); nothing chosen is no action.
local function show_message_request(_, params)
  local titles = {}
  for _, action in ipairs(params.actions or {}) do
    table.insert(titles, action.title)
  end
  local chosen, answered = nil, false
  vim.ui.select(titles, { prompt = params.message }, function(item)
    chosen, answered = item, true
  end)
  vim.wait(600000, function() return answered end, 50)
  return chosen and { title = chosen } or vim.NIL
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
        ["window/showMessageRequest"] = show_message_request,
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
  vim.api.nvim_create_user_command("TorchscopeRun", function(args)
    -- `:TorchscopeRun --mode train python train.py`: which calls to profile (train|eval|any)
    local mode, entry = args.args:match("^%-%-mode[= ](%S+)%s+(.+)$")
    entry = entry or args.args
    run_command("torchscope.profileInRun", vim.api.nvim_get_current_buf(), cursor_line(), nil,
      "running `" .. entry .. "`", { entry = entry, mode = mode })
  end, { nargs = "+", complete = "file",
    desc = "torchscope: profile the function on the arguments the program {cmd} passes it "
      .. "[--mode train|eval|any]" })
  vim.api.nvim_create_user_command("TorchscopeFix", function(args)
    local bufnr = vim.api.nvim_get_current_buf()
    if args.args ~= "" then
      try_fix(bufnr, cursor_line(), args.args)
    else
      pick_fix(bufnr, cursor_line())
    end
  end, { nargs = "?", desc = "torchscope: measure a fix of the function [ID], then Apply / Discard" })
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
