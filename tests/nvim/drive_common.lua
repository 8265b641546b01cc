-- What every driver needs: the notifications Neovim shows (vim.notify is replaced to record
-- them) and `write(data)`, which writes `data` as JSON to $TORCHSCOPE_NVIM_OUT.
-- Load with `dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "drive_common.lua")`.
local common = { notes = {} }
vim.notify = function(message, level)
  table.insert(common.notes, { message = message, level = level })
end

function common.write(data)
  local file = assert(io.open(vim.env.TORCHSCOPE_NVIM_OUT, "w"))
  file:write(vim.json.encode(data))
  file:close()
end

return common
