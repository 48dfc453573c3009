-- The fenced write of io.fencer.redis.RedisFence: checks the presented token against the scope's fence and, when
-- admitted, applies the write and advances the fence, all in one script call (Redis runs scripts atomically).
-- KEYS[1] fence key, KEYS[2] data key, KEYS[3] (optional) a list to which the admitted token is appended.
-- ARGV[1] presented token (decimal), ARGV[2] '1' for STRICT or '0' for AT_LEAST, ARGV[3] operation
-- (set, hset, del), ARGV[4..] its arguments. Returns {1, previously accepted} or {0, accepted} when refused.
-- Tokens are compared as decimal strings: Lua numbers are doubles and lose precision above 2^53.
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local operation = ARGV[3]
if operation ~= 'set' and operation ~= 'hset' and operation ~= 'del' then
  return redis.error_reply('ERR fencer: unknown fenced operation ' .. tostring(operation))
end
local accepted = redis.call('GET', KEYS[1])
if not accepted then
  accepted = '0'
elseif not (accepted == '0' or string.match(accepted, '^[1-9]%d*$')) then
  return redis.error_reply('ERR fencer: fence key ' .. KEYS[1] .. ' does not hold a token')
end
local presented = ARGV[1]
local refused
if ARGV[2] == '1' then
  refused = not less(accepted, presented)
else
  refused = less(presented, accepted)
end
if refused then
  return {0, accepted}
end
-- The write goes first: a failing command (e.g. WRONGTYPE) aborts the script before the fence moves, and Redis
-- does not roll back a script's earlier commands.
if operation == 'set' then
  redis.call('SET', KEYS[2], ARGV[4])
elseif operation == 'hset' then
  redis.call('HSET', KEYS[2], unpack(ARGV, 4))
else
  redis.call('DEL', KEYS[2])
end
if KEYS[3] then
  redis.call('RPUSH', KEYS[3], presented)
end
redis.call('SET', KEYS[1], presented)
return {1, accepted}
