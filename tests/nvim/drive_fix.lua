-- Run inside `nvim --headless -u tests/nvim/init.lua fix_samples.py -c "luafile …/drive_fix.lua"`:
-- put the cursor in `train_step`, run :TorchscopeFix (no id: pick the "Try fix: …" code action
-- from vim.ui.select), answer Apply to the measured message, wait for the buffer to change,
-- undo, and write what happened to $TORCHSCOPE_NVIM_OUT as JSON.
local buf = vim.api.nvim_get_current_buf()
local common = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "drive_common.lua")
local notes, write = common.notes, common.write
local prompts = {}
vim.ui.select = function(items, opts, on_choice)
  local shown = {}
  for _, item in ipairs(items) do
    table.insert(shown, opts.format_item and opts.format_item(item) or item)
  end
  table.insert(prompts, { prompt = opts.prompt, items = shown })
  for i, text in ipairs(shown) do
    if text:find("^Try fix: zero_grad") or text == "Apply" then
      return on_choice(items[i], i)
    end
  end
  on_choice(nil)
end

local function text()
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

local function drive()
  assert(vim.wait(60000, function() return require("torchscope").client_for(buf) ~= nil end, 50),
    "the torchscope client did not attach within 60 s")
  local def = vim.fn.search("^def train_step(", "n")
  assert(def > 0, "no def train_step( in the buffer")
  vim.api.nvim_win_set_cursor(0, { def + 1, 4 })
  local original = text()
  vim.cmd("TorchscopeFix")
  assert(vim.wait(240000, function() return text():find("model.zero_grad(set_to_none=True)", 1, true) ~= nil end, 100),
    "the buffer did not change within 240 s; prompts: " .. vim.inspect(prompts)
      .. " notifications: " .. vim.inspect(notes))
  local applied = text()
  vim.cmd("undo")
  write({ prompts = prompts, notifications = notes, original = original, applied = applied,
    undone = text() })
end

common.run(drive, { prompts = prompts })
