-- bench/posts-write.lua: wrk sends pre-made requests, each exactly once.
--
--   wrk -t T -c C -d S -s bench/posts-write.lua URL -- PREFIX
--
-- PREFIX.0 .. PREFIX.(T-1) are written by bench/posts-sign.pl, one file
-- per wrk thread: records "<length>\n<raw HTTP request>".  Thread i sends
-- the requests of PREFIX.i in order, each once (signed requests carry a
-- nonce the server accepts only once).  When a thread has sent its last
-- one it stops (thread:stop) and the next request() returns a GET of
-- /bench-exhausted, which nginx answers 404 if it ever arrives: wrk then
-- counts it as an error, so a run that ran out shows as such.  done()
-- prints "posts-write.lua: sent N, exhausted K of T threads"; the caller
-- sizes the files for the duration so that no thread runs out.

local threads = {}
local counter = 0

function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
    table.insert(threads, thread)
end

local reqs = {}
local n, i = 0, 0
sent, exhausted = 0, 0

function init(args)
    local prefix = args[1]
    if not prefix then
        error("usage: wrk ... -s posts-write.lua URL -- PREFIX")
    end
    local f = assert(io.open(prefix .. "." .. id, "rb"))
    while true do
        local len = f:read("*l")
        if not len then break end
        n = n + 1
        reqs[n] = f:read(tonumber(len))
    end
    f:close()
end

function request()
    i = i + 1
    if i <= n then
        sent = i
        return reqs[i]
    end
    if exhausted == 0 then
        exhausted = 1
        wrk.thread:stop()
    end
    return wrk.format("GET", "/bench-exhausted")
end

function done(summary, latency, requests)
    local s, e = 0, 0
    for _, t in ipairs(threads) do
        s = s + t:get("sent")
        e = e + t:get("exhausted")
    end
    io.write(string.format("posts-write.lua: sent %d, exhausted %d of %d threads\n",
                           s, e, #threads))
end
