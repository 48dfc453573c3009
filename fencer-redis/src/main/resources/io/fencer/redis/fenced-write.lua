-- The fenced write of io.fencer.redis.RedisFence: checks the presented token against the scope's fence and, when
-- admitted, applies the write and advances the fence, all in one script call (Redis runs scripts atomically).
-- KEYS[1] fence key, KEYS[2] data key, KEYS[3] the scope's last-write key (STRICT only reads or writes it), KEYS[4]
-- (optional) a list to which the admitted token is appended.
-- ARGV[1] presented token (decimal), ARGV[2] '1' for STRICT or '0' for AT_LEAST, ARGV[3] the call's write id (STRICT;
-- '' under AT_LEAST), ARGV[4] operation (set, hset, del), ARGV[5..] its arguments.
-- Returns {1, previously accepted} when admitted and applied, {2, accepted} when this very call was admitted by an
-- earlier run (a repeat: nothing applied again), or {0, accepted} when refused.
-- Tokens are compared as decimal strings: Lua numbers are doubles and lose precision above 2^53.
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
-- The last-write key holds the write ids of the scope's last RECENT_MAX admitted STRICT writes, newest first,
-- separated by spaces (an earlier version kept the last one alone, which reads as a list of one).
local RECENT_MAX = 16
local function recentIds()
  local ids = {}
  local text = redis.call('GET', KEYS[3])
  if text then
    for id in string.gmatch(text, '%S+') do ids[#ids + 1] = id end
  end
  return ids
end
local strict = ARGV[2] == '1'
local writeId = ARGV[3]
local operation = ARGV[4]
if operation ~= 'set' and operation ~= 'hset' and operation ~= 'del' then
  return redis.error_reply('ERR fencer: unknown fenced operation ' .. tostring(operation))
end
if strict and writeId == '' then
  return redis.error_reply('ERR fencer: a STRICT fenced write needs a write id')
end
local accepted = redis.call('GET', KEYS[1])
if not accepted then
  accepted = '0'
elseif not (accepted == '0' or string.match(accepted, '^[1-9]%d*$')) then
  return redis.error_reply('ERR fencer: fence key ' .. KEYS[1] .. ' does not hold a token')
end
local presented = ARGV[1]
if strict then
  if not less(accepted, presented) then
    -- The fence is at this token or past it: either another call was admitted with it or a newer one (refused: one
    -- write per token), or this very call was, and runs again because its reply was lost and the driver sent it
    -- again (Lettuce re-sends, after reconnecting, a command it sent but got no reply to), perhaps after a newer
    -- token's write. The recent write ids tell them apart exactly, while this call is among the scope's last
    -- RECENT_MAX writes: a write id is drawn at random for one call. Absent when the fence was set by a version that
    -- kept no write ids, and then the call is refused, as that version did.
    for _, id in ipairs(recentIds()) do
      if id == writeId then return {2, accepted} end
    end
    return {0, accepted}
  end
elseif less(presented, accepted) then
  return {0, accepted}
end
-- The write goes first: a failing command (e.g. WRONGTYPE) aborts the script before the fence moves, and Redis
-- does not roll back a script's earlier commands.
if operation == 'set' then
  redis.call('SET', KEYS[2], ARGV[5])
elseif operation == 'hset' then
  redis.call('HSET', KEYS[2], unpack(ARGV, 5))
else
  redis.call('DEL', KEYS[2])
end
if KEYS[4] then
  redis.call('RPUSH', KEYS[4], presented)
end
redis.call('SET', KEYS[1], presented)
if strict then
  -- Only STRICT needs it (AT_LEAST admits a repeat anyway), so AT_LEAST's writes cost what they did.
  local recent = recentIds()
  local kept = {writeId}
  for i = 1, math.min(#recent, RECENT_MAX - 1) do kept[#kept + 1] = recent[i] end
  redis.call('SET', KEYS[3], table.concat(kept, ' '))
end
return {1, accepted}
