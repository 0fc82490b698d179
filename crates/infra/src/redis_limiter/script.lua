-- One rate-limit decision for one subject, atomically: the rules of the in-process limiter
-- (RateLimitState::check in crates/domain/src/rate_limit/mod.rs), on the subject's state in
-- one hash.
--
-- KEYS[1]  the subject's state: a hash of m (minute index), mc (its count), d (day index),
--          dc (its count), r (refusals since the last admission), su (end of a suspension,
--          Unix seconds; 0 when none)
-- ARGV[1]  requests a minute        ARGV[2]  requests a day
-- ARGV[3]  1 if the subject can be suspended, else 0
-- ARGV[4]  refusals tolerated after the first before a suspension
-- ARGV[5]  seconds a suspension lasts
-- ARGV[6]  1 to count the request, 0 to only look, 2 to give back a slot admitted at the
--          time ARGV[7] (RateLimitState::give_back), 3 to give back its day's count only
-- ARGV[7]  the time in Unix seconds, or empty for Redis's own clock (TIME): one clock for
--          every instance
--
-- Returns the state as it was before this request (windows already moved to now) and the
-- time used: {m, mc, d, dc, r, su, now}. The caller derives the decision from it with the
-- same rules; the state stored is the one after the decision. A give-back returns nothing.

if ARGV[6] == '2' or ARGV[6] == '3' then
  local taken = tonumber(ARGV[7])
  local s = redis.call('HMGET', KEYS[1], 'm', 'mc', 'd', 'dc')
  if ARGV[6] == '2' and tonumber(s[1]) == math.floor(taken / 60) and (tonumber(s[2]) or 0) > 0 then
    redis.call('HINCRBY', KEYS[1], 'mc', -1)
  end
  if tonumber(s[3]) == math.floor(taken / 86400) and (tonumber(s[4]) or 0) > 0 then
    redis.call('HINCRBY', KEYS[1], 'dc', -1)
  end
  return {}
end

local now
if ARGV[7] == '' then
  now = tonumber(redis.call('TIME')[1])
else
  now = tonumber(ARGV[7])
end
local per_minute, per_day = tonumber(ARGV[1]), tonumber(ARGV[2])
local minute, day = math.floor(now / 60), math.floor(now / 86400)

local s = redis.call('HMGET', KEYS[1], 'm', 'mc', 'd', 'dc', 'r', 'su')
local m, mc = tonumber(s[1]) or minute, tonumber(s[2]) or 0
local d, dc = tonumber(s[3]) or day, tonumber(s[4]) or 0
local r, su = tonumber(s[5]) or 0, tonumber(s[6]) or 0
if m ~= minute then m, mc = minute, 0 end
if d ~= day then d, dc = day, 0 end
local before = {m, mc, d, dc, r, su, now}

if ARGV[6] == '1' then
  if now < su then
    -- suspended: nothing changes
  elseif mc < per_minute and dc < per_day then
    mc, dc, r = mc + 1, dc + 1, 0
  else
    r = r + 1
    if ARGV[3] == '1' and r - 1 > tonumber(ARGV[4]) then
      r, su = 0, now + math.max(tonumber(ARGV[5]), 1)
    end
  end
  redis.call('HSET', KEYS[1], 'm', m, 'mc', mc, 'd', d, 'dc', dc, 'r', r, 'su', su)
  -- Kept while a window or the suspension can still refuse (a day that holds 1,440 full
  -- minutes never can), and a minute more for clocks that pass the time.
  local keep = (d + 1) * 86400
  if per_day >= per_minute * 1440 then keep = (m + 1) * 60 end
  -- (Relative to `now`, so that a test's clock means what Redis's would.)
  redis.call('EXPIRE', KEYS[1], math.max(keep, su) + 60 - now)
end
return before
