-- wrk's script for `make bookstore` (bench/modes/bookstore/run.py): requests spread like users', not one cached row.
-- Arguments after `--`: the load (author, list or mixed), SCALE (valid ids are 1..SCALE), the list's first
-- offset and how many pages past it (list), the share of writes in a thousand (mixed), a token that marks
-- this run's writes and the JSON body of a write, with @@MARKER@@ where each write's marker goes. Each thread
-- counts its answers by status and keeps the marker of every write acknowledged (201, whose body names the author
-- written); done() prints them on one line that starts with BOOKSTORE, for the harness to look each one up.

local threads = {}

function setup(thread)
  -- Runs in wrk's main thread: a distinct number per thread, for its seed and its write markers.
  thread:set("thread_number", #threads + 1)
  table.insert(threads, thread)
end

local load, scale, first_offset, pages, writes_per_thousand, token, body_template
-- Globals, not locals: done() reads them from each thread with thread:get, which sees only globals.
statuses, written, acknowledged = {}, 0, {}
local sent = 0
local last_was_write = false

function init(args)
  load, scale = args[1], tonumber(args[2])
  first_offset, pages = tonumber(args[3]), tonumber(args[4])
  writes_per_thousand, token, body_template = tonumber(args[5]), args[6], args[7]
  -- Each thread has its own Lua state and generator: seeded apart, or every thread sends the same ids.
  math.randomseed(os.time() * 1000 + thread_number)
  for _ = 1, 10 do math.random() end
end

local function read_author()
  return wrk.format("GET", "/author/" .. math.random(1, scale))
end

local function write_author()
  sent = sent + 1
  -- Unique per run, thread and request: afterwards every acknowledged write can be looked up by its marker.
  local marker = token .. "-" .. thread_number .. "-" .. sent
  local body = string.gsub(body_template, "@@MARKER@@", marker)
  return wrk.format("POST", "/author", {["Content-Type"] = "application/json"}, body)
end

function request()
  if load == "author" then
    return read_author()
  elseif load == "list" then
    -- A page near the offset: the same cost (the database skips about as many rows), not the same 20 rows.
    local offset = first_offset + math.random(0, pages - 1) * 20
    return wrk.format("GET", "/author?limit=20&offset=" .. offset)
  end
  last_was_write = math.random(1, 1000) <= writes_per_thousand
  return last_was_write and write_author() or read_author()
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 201 then
    written = written + 1
    local marker = string.match(body or "", '"name"%s*:%s*"([%w%-]+)"')
    if marker then
      table.insert(acknowledged, marker)
    end
  end
end

function done(summary, latency, requests)
  local totals, written_in_all, markers = {}, 0, {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      totals[status] = (totals[status] or 0) + count
    end
    written_in_all = written_in_all + thread:get("written")
    for _, marker in ipairs(thread:get("acknowledged")) do
      table.insert(markers, '"' .. marker .. '"')
    end
  end
  local parts = {}
  for status, count in pairs(totals) do
    table.insert(parts, string.format('"%d": %d', status, count))
  end
  io.write(string.format('BOOKSTORE {"statuses": {%s}, "acknowledged_writes": %d, "acknowledged": [%s]}\n',
    table.concat(parts, ", "), written_in_all, table.concat(markers, ", ")))
end
