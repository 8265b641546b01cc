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

-- Run `drive`; on an error write it (with the notifications and `extra`), then quit Neovim
-- with the outcome as its exit status.
function common.run(drive, extra)
  local ok, err = xpcall(drive, debug.traceback)
  if not ok then
    common.write(vim.tbl_extend("force", { error = tostring(err), notifications = common.notes }, extra or {}))
  end
  vim.cmd(ok and "qa!" or "cquit 1")
end

return common
