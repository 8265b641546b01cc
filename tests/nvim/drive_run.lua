-- Run inside `nvim --headless -u tests/nvim/init.lua train.py -c "luafile …/drive_run.lua"`:
-- put the cursor in `Attention.forward`, run :TorchscopeRun on the script itself, wait for the
-- answer, and write the diagnostics and notifications to $TORCHSCOPE_NVIM_OUT as JSON.
-- $TORCHSCOPE_NVIM_RUN overrides the command's arguments (e.g. `--mode train python train.py`).
local buf = vim.api.nvim_get_current_buf()
local common = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "drive_common.lua")
local notes, write = common.notes, common.write

local function answered()
  for _, note in ipairs(notes) do
    if note.message:find("calls seen in the run", 1, true) or note.level == vim.log.levels.ERROR then
      return true
    end
  end
  return false
end

local function drive()
  assert(vim.wait(60000, function() return require("torchscope").client_for(buf) ~= nil end, 50),
    "the torchscope client did not attach within 60 s")
  local def = vim.fn.search("^    def forward(self, x", "n")
  assert(def > 0, "no def forward(self, x in the buffer")
  vim.api.nvim_win_set_cursor(0, { def + 1, 8 })
  vim.cmd("TorchscopeRun " .. (vim.env.TORCHSCOPE_NVIM_RUN or "python train.py --steps 6"))
  assert(vim.wait(240000, answered, 100),
    "no answer within 240 s; notifications: " .. vim.inspect(notes))
  local rows = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == "torchscope" then
      table.insert(rows, { lnum = d.lnum, message = d.message, severity = d.severity })
    end
  end
  write({ def_line = def - 1, diagnostics = rows, notifications = notes })
end

common.run(drive)
