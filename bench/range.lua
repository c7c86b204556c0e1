-- bench/range.lua: wrk script for bench/serve. GET requests for CHUNK bytes (Range: bytes=S-E) at random
-- offsets within a file of SIZE bytes, like a media player seeking around.
--
--   wrk -s bench/range.lua URL -- SIZE [CHUNK] [SEED] [check]
--
-- CHUNK defaults to 1 MiB, SEED to 1 (each thread seeds math.random with SEED and its number, so runs are
-- repeatable). With `check`, every response is verified (status 206, body exactly CHUNK bytes); this makes
-- wrk copy each body into Lua, so it is for a separate pass, not for the throughput figure.
-- `done` prints one machine-readable line, "wrk-result key=value ...", which bench/serve parses.

local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("thread_number", #threads)
end

function init(args)
   size  = tonumber(args[1]) or error("range.lua: give the file size: wrk ... -- SIZE")
   chunk = tonumber(args[2] or 1048576)
   seed  = tonumber(args[3] or 1)
   if chunk > size then chunk = size end
   math.randomseed(seed * 1000 + thread_number)
   checked, bad_status, bad_length = 0, 0, 0
   statuses = ""
   if args[4] == "check" then
      local seen = {}
      response = function(status, headers, body)
         checked = checked + 1
         if status ~= 206 then
            bad_status = bad_status + 1
            if not seen[status] then
               seen[status] = true
               statuses = statuses .. (statuses == "" and "" or ",") .. status
            end
         elseif #body ~= chunk then
            bad_length = bad_length + 1
         end
      end
   end
end

function request()
   local first = math.random(0, size - chunk)
   local headers = { Range = string.format("bytes=%.0f-%.0f", first, first + chunk - 1) }
   return wrk.format("GET", nil, headers)
end

function done(summary, latency, requests)
   local c, s, l, st = 0, 0, 0, ""
   for _, thread in ipairs(threads) do
      c = c + (thread:get("checked") or 0)
      s = s + (thread:get("bad_status") or 0)
      l = l + (thread:get("bad_length") or 0)
      local t = thread:get("statuses") or ""
      if t ~= "" then st = st .. (st == "" and "" or ",") .. t end
   end
   local e = summary.errors
   io.write(string.format(
      "wrk-result requests=%d bytes=%.0f duration_us=%.0f connect=%d read=%d write=%d status=%d timeout=%d"
         .. " latency_p50_us=%.0f latency_p99_us=%.0f latency_max_us=%.0f checked=%d non206=%d short=%d statuses=%s\n",
      summary.requests, summary.bytes, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(99), latency.max, c, s, l, st == "" and "-" or st))
end
