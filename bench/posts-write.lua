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
-- also creates PREFIX.done.i, so that a caller filling a store can tell
-- when every thread has sent everything.  done() prints
-- "posts-write.lua: sent N, exhausted K of T threads"; for a timed run
-- the caller sizes the files so that no thread runs out.
--
-- With "cycle" after PREFIX (wrk ... -- PREFIX cycle) a thread starts
-- again from its first request instead: for the baseline, which checks
-- no nonces.

local threads = {}
local counter = 0

function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
    table.insert(threads, thread)
end

local reqs = {}
local n, i = 0, 0
local prefix, cycle
sent, exhausted = 0, 0

function init(args)
    prefix = args[1]
    cycle = args[2] == "cycle"
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
    if n == 0 then
        error(prefix .. "." .. id .. ": no requests")
    end
end

-- wrk calls request() of thread 0 once before the run, to check the
-- request and count pipelined ones (script_verify_request): that request
-- is never sent, so the first call there only peeks at the first request.
local peeked = false

function request()
    if id == 0 and not peeked then
        peeked = true
        return reqs[1]
    end
    i = i + 1
    if cycle and i > n then
        i = 1
    end
    if i <= n then
        sent = sent + 1
        return reqs[i]
    end
    if exhausted == 0 then
        exhausted = 1
        local f = io.open(prefix .. ".done." .. id, "w")
        if f then f:close() end
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
