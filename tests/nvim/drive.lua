-- Run inside `nvim --headless -u tests/nvim/init.lua FILE -c "luafile tests/nvim/drive.lua"`:
-- wait for the torchscope client, run :TorchscopeProfile on the line below `def fn`, wait for
-- its diagnostics, ask for the hover on the `def` line and the code lenses, clear, run the
-- `Profile` lens, and write everything Neovim got to $TORCHSCOPE_NVIM_OUT as JSON.
local buf = vim.api.nvim_get_current_buf()
local common = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "drive_common.lua")
local notes, write = common.notes, common.write

local function torchscope_client()
  return require("torchscope").client_for(buf)
end

local function ours()
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == "torchscope" then
      table.insert(found, d)
    end
  end
  return found
end

local function simple(found)
  local rows = {}
  for _, d in ipairs(found) do
    table.insert(rows, {
      lnum = d.lnum, message = d.message, source = d.source, severity = d.severity,
      code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
    })
  end
  return rows
end

local function drive()
  assert(vim.bo[buf].filetype == "python", "filetype is " .. vim.bo[buf].filetype)
  assert(vim.wait(60000, function() return torchscope_client() ~= nil end, 50),
    "the torchscope client did not attach within 60 s")
  local def = vim.fn.search("^def fn(", "n")
  assert(def > 0, "no def fn( in the buffer")
  vim.api.nvim_win_set_cursor(0, { def + 1, 4 }) -- inside the body: the enclosing function
  vim.cmd("TorchscopeProfile")
  assert(vim.wait(240000, function() return #ours() > 0 end, 100),
    "no torchscope diagnostic within 240 s; notifications: " .. vim.inspect(notes))
  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = def - 1, character = 4 },
  }, 20000)
  local hover_text = {}
  for _, response in pairs(hover or {}) do
    if response.result and response.result.contents then
      table.insert(hover_text, response.result.contents.value or vim.inspect(response.result.contents))
    end
  end
  vim.lsp.codelens.refresh()
  vim.wait(20000, function() return #vim.lsp.codelens.get(buf) > 1 end, 50)
  local lenses = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    table.insert(lenses, {
      line = lens.range.start.line,
      title = lens.command and lens.command.title,
      command = lens.command and lens.command.command,
    })
  end
  vim.wait(2000, function() return #notes > 1 end, 50) -- the headline notification
  local diagnostics = simple(ours())
  -- Forget the result, then run the `Profile` code lens the way a user does
  -- (vim.lsp.codelens.run on the def line, choosing the lens from vim.ui.select).
  vim.cmd("TorchscopeClear")
  assert(vim.wait(20000, function() return #ours() == 0 end, 50), "TorchscopeClear kept diagnostics")
  vim.api.nvim_win_set_cursor(0, { def, 0 })
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      if opts.format_item(item) == "Profile" then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  vim.lsp.codelens.run()
  assert(vim.wait(240000, function() return #ours() > 0 end, 100),
    "the Profile lens brought no diagnostic back; notifications: " .. vim.inspect(notes))
  write({ def_line = def - 1, diagnostics = diagnostics, hover = hover_text, lenses = lenses,
    notifications = notes, after_lens = simple(ours()) })
end

common.run(drive)
