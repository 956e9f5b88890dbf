"""A frontier in Redis, shared by every process (on any machine) crawling one site.

All state lives under ``archiver:{CRAWL_ID}:`` and every change is one Lua script, so
Redis alone decides who gets what; there is no coordinator process.

* ``add`` checks the seen set and enqueues in one script per page (all its links at
  once): a URL is queued once however many workers find it at the same moment, and a
  redirect to a URL already seen is coalesced the same way.
* ``get`` takes a *lease*: the URL moves from its host's queue to a sorted set of
  leases with a deadline and the worker's token.  A background task renews the leases
  of the URLs this process is working on; when a worker dies (``kill -9``, a lost
  machine) its leases expire and the next script run by any worker puts them back in
  the queue.  Nothing is popped destructively, so nothing in flight is lost.
* ``done`` only counts while the caller still holds the lease (same token): a worker
  presumed dead that wakes up cannot record a URL another worker took over.
* Politeness is global: queues are per host, and a host is handed out only while its
  leases are fewer than ``per_host_concurrency`` and its last lease is at least
  ``delay`` old, whichever worker asks.  Times are Redis's own clock (``TIME``), so
  machines need not agree on the time.
* Work is shared fairly: a worker that asked for more than it got in the last
  ``HUNGRY_SECONDS`` is *hungry*, and a host's free slot goes to the hungry worker
  holding the fewest of that host's leases: a worker does not take it while another
  hungry worker holds fewer.  Without this the worker finishing a URL, which asks for
  the next one in the same script, would take back every slot it frees and the other
  workers on a busy host would wait forever.
* The crawl is over for everyone when no URL is queued and no lease is outstanding.

When Redis stops answering, every call is retried with exponential backoff for
`retry_window` seconds; then `FrontierLostError` stops the crawl the usual way
(plugins close their WARC files), and running the worker again rejoins the crawl.
When Redis answers but the crawl's keys are gone (a server restarted without
persistence, a flush), every script refuses to run rather than recreate a partial crawl,
and `FrontierVanishedError` stops every process of the crawl: an empty queue must never
read as a finished crawl.

A process joining a crawl that is already stored (a second `archiver crawl` with the same
`--crawl-id`) must crawl by the crawl's own settings: one that differs in anything but
its own folder, task count and plugins is refused with the first difference named.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import json
import logging
import os
import secrets
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions as redis_errors
from redis.backoff import NoBackoff
from redis.retry import Retry

from archiver.api import (
    HELD_SECONDS,
    ArchiveError,
    ConfigError,
    Counts,
    Frontier,
    FrontierUnreachable,
    Holding,
    HostLimiter,
    Item,
    LinkKind,
    UsageError,
    configured_delay,
    dump_toml,
    site_of,
)

from .settings import NAME, RedisSettings

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

    from archiver.api import Config

log = logging.getLogger(__name__)

T = TypeVar("T")

KEY_PREFIX = "archiver:{%s}:"
"""All of a crawl's keys share one hash tag, so they live in one slot."""
POLL_MIN = 0.02
POLL_MAX = 0.5
"""Bounds of the wait between two looks at an empty (or host-bound) queue."""
SWEEP_LIMIT = 200
"""Expired leases put back per script run, so one run stays short."""
HUNGRY_SECONDS = 4 * POLL_MAX
"""How long a worker that asked for work and got less counts as waiting for its share."""
ROBOTS_CLAIM_SECONDS = 90.0
"""How long a process may fetch a robots.txt for the whole crawl before another may try."""
ROBOTS_POLL_SECONDS = 0.05
HOLD_WAIT_SECONDS = 5.0
"""How long a pause waits for the other processes of the crawl to hold before it is answered."""
HOLD_POLL_SECONDS = 0.02
HELD_KEPT_SECONDS = 3600
"""How long the answers to a pause stay in Redis."""
CONNECT_TIMEOUT = 5.0
COMMAND_TIMEOUT = 30.0
RELEASE_TIMEOUT = 3.0

CONNECTION_ERRORS = (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError)
VANISHED = "ARCHIVER_VANISHED"
"""The error every script returns when the crawl's keys are gone."""
PER_PROCESS = frozenset(
    {"crawl.output", "crawl.max_tasks", "crawl.frontier", "plugins.enable", "plugins.disable"}
)
"""Settings each process of a shared crawl chooses for itself; every other one is the crawl's."""


class FrontierUnavailableError(FrontierUnreachable):
    """The Redis server of a shared frontier cannot be reached (or stopped answering)."""


class FrontierLostError(FrontierUnavailableError):
    """Redis stopped answering during a crawl and did not come back in time."""


class FrontierVanishedError(FrontierLostError):
    """Redis answers, but the crawl's keys are gone: its queue and seen set are lost."""


class CrawlFinishedError(UsageError):
    """The crawl id names a crawl that is over: running it again would fetch nothing."""


def prefix_for(crawl_id: str) -> str:
    return KEY_PREFIX % crawl_id


def redacted(url: str) -> str:
    """The Redis URL without its password, for messages."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"


def connect(url: str) -> aioredis.Redis:
    """An asyncio client that fails fast: retrying is this module's job, with backoff."""
    return aioredis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=COMMAND_TIMEOUT,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


# -- Lua ---------------------------------------------------------------------------------
# ARGV[1] is always the key prefix.  Keys (after the prefix):
#   seen     SET    canonical keys ever queued
#   items    HASH   key -> item payload (JSON), until the URL is done
#   q:HOST   LIST   keys of pages queued for HOST, oldest first
#   r:HOST   LIST   keys of page requisites queued for HOST, oldest first: handed out before its pages
#   hosts    ZSET   HOST -> when it may next be served; only hosts with queued URLs and a free slot
#   next     HASH   HOST -> earliest start of its next lease (now + its gap at the last lease, or
#                   the end of its pause)
#   gap      HASH   HOST -> its gap between two requests, as the politeness policy last gave it
#   started  HASH   HOST -> when its last request started, whichever process sent it
#   pause    HASH   HOST -> paused until (Retry-After, robots.txt unavailable, `control host` hold)
#   robots   HASH   ORIGIN -> its robots.txt answer as one process fetched it (JSON: status, body)
#   robots-claim:ORIGIN  STRING  WORKER fetching that robots.txt now (expires)
#   active   HASH   HOST -> leases outstanding
#   mine     HASH   HOST|WORKER -> leases of HOST that WORKER holds
#   hungry   ZSET   WORKER -> when it last asked for more work than it got
#   leases   ZSET   key -> deadline
#   owner    HASH   key -> "TOKEN|HOST|WORKER"
#   counts   HASH   queued, done, failed, requeued, lost
#   meta     HASH   concurrency, delay, lease, max_pages, created, paused (set while paused)
#   held:ID  HASH   WORKER -> requests on the wire when it held for control command ID
#   config   STRING the crawl's configuration (TOML), for `archiver worker`
#   workers  HASH   WORKER -> JSON heartbeat
#   control  LIST   live-control commands (`archiver control`), each JSON with the sender

_PRELUDE = """
local p = ARGV[1]
if redis.call('EXISTS', p..'meta') == 0 then
  return redis.error_reply('__VANISHED__ the crawl keys are gone')
end
local function num(v, default) return tonumber(v) or default end
local function now_seconds()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local conc = num(redis.call('HGET', p..'meta', 'concurrency'), 1)
local function queued(host)
  return redis.call('LLEN', p..'r:'..host) + redis.call('LLEN', p..'q:'..host)
end
local function queue_of(host, payload)
  -- a page requisite waits in its host's first queue (r:), anything else in q:
  local ok, item = pcall(cjson.decode, payload or '')
  if ok and type(item) == 'table' and item[5] ~= nil and item[5] ~= 'page' then return p..'r:'..host end
  return p..'q:'..host
end
local function offer(host)
  -- make HOST servable again if it has queued URLs and a free slot
  if num(redis.call('HGET', p..'active', host), 0) < conc
     and queued(host) > 0 then
    redis.call('ZADD', p..'hosts', 'NX', num(redis.call('HGET', p..'next', host), 0), host)
  end
end
local function unlease(key, owner, outcome)
  -- end the lease of KEY; OUTCOME 'requeue' puts it back at the head of its host's queue
  local host, worker = string.match(owner, '^%d+|(.*)|([^|]*)$')
  redis.call('HDEL', p..'owner', key)
  redis.call('ZREM', p..'leases', key)
  local active = redis.call('HINCRBY', p..'active', host, -1)
  if active <= 0 then redis.call('HDEL', p..'active', host) end
  local mine = redis.call('HINCRBY', p..'mine', host..'|'..worker, -1)
  if mine <= 0 then redis.call('HDEL', p..'mine', host..'|'..worker) end
  if outcome == 'requeue' or outcome == 'back' then
    redis.call('LPUSH', queue_of(host, redis.call('HGET', p..'items', key)), key)
    redis.call('HINCRBY', p..'counts', 'queued', 1)
    if outcome == 'requeue' then redis.call('HINCRBY', p..'counts', 'requeued', 1) end
  else
    redis.call('HDEL', p..'items', key)
    redis.call('HINCRBY', p..'counts', outcome, 1)
  end
  offer(host)
end
local function sweep(now)
  local expired = redis.call('ZRANGEBYSCORE', p..'leases', '-inf', now, 'LIMIT', 0, __SWEEP__)
  for _, key in ipairs(expired) do
    local owner = redis.call('HGET', p..'owner', key)
    if owner then unlease(key, owner, 'requeue') else redis.call('ZREM', p..'leases', key) end
  end
  return #expired
end
local function owns(key, token, worker)
  local owner = redis.call('HGET', p..'owner', key)
  if owner and string.sub(owner, 1, #token + 1) == token..'|'
     and string.sub(owner, -(#worker + 1)) == '|'..worker then
    return owner
  end
  return nil
end
local function hungry_others(worker, now)
  redis.call('ZREMRANGEBYSCORE', p..'hungry', '-inf', now - __HUNGRY__)
  local others = {}
  for _, name in ipairs(redis.call('ZRANGE', p..'hungry', 0, -1)) do
    if name ~= worker then others[#others + 1] = name end
  end
  return others
end
local function fair(host, worker, others)
  -- a free slot of HOST goes to the hungry worker holding the fewest of its leases
  local mine = num(redis.call('HGET', p..'mine', host..'|'..worker), 0)
  for _, name in ipairs(others) do
    if num(redis.call('HGET', p..'mine', host..'|'..name), 0) < mine then return false end
  end
  return true
end
local function lease(worker, want, now, out)
  local ttl = num(redis.call('HGET', p..'meta', 'lease'), 30)
  local delay = num(redis.call('HGET', p..'meta', 'delay'), 0)
  local others = hungry_others(worker, now)
  local taken, skipped = 0, 0
  if redis.call('HEXISTS', p..'meta', 'paused') == 1 then want = 0 end
  while taken < want do
    local host = redis.call('ZRANGEBYSCORE', p..'hosts', '-inf', now, 'LIMIT', skipped, 1)[1]
    if not host then break end
    local key = nil
    if fair(host, worker, others) then
      key = redis.call('LPOP', p..'r:'..host) or redis.call('LPOP', p..'q:'..host)
      if not key then redis.call('ZREM', p..'hosts', host) end
    else
      skipped = skipped + 1  -- left for a hungry worker that holds fewer of HOST's leases
    end
    if key then
      local token = redis.call('INCR', p..'tokens')
      local active = redis.call('HINCRBY', p..'active', host, 1)
      redis.call('HINCRBY', p..'mine', host..'|'..worker, 1)
      redis.call('ZADD', p..'leases', now + ttl, key)
      redis.call('HSET', p..'owner', key, token..'|'..host..'|'..worker)
      local after = now + num(redis.call('HGET', p..'gap', host), delay)
      local paused = num(redis.call('HGET', p..'pause', host), 0)
      if paused > after then after = paused end
      redis.call('HSET', p..'next', host, after)
      if active >= conc or queued(host) == 0 then
        redis.call('ZREM', p..'hosts', host)
      else
        redis.call('ZADD', p..'hosts', after, host)
      end
      out[#out + 1] = key
      out[#out + 1] = tostring(token)
      out[#out + 1] = redis.call('HGET', p..'items', key) or ''
      taken = taken + 1
    end
  end
  if taken > 0 then redis.call('HINCRBY', p..'counts', 'queued', -taken) end
  if taken < want then
    redis.call('ZADD', p..'hungry', now, worker)
  else
    redis.call('ZREM', p..'hungry', worker)
  end
  return taken
end
local function state(now, out)
  -- queued, leases, seconds until something may be servable (-1: unknown)
  local queued = num(redis.call('HGET', p..'counts', 'queued'), 0)
  local leases = redis.call('ZCARD', p..'leases')
  local wait = -1
  local first = redis.call('ZRANGE', p..'hosts', 0, 0, 'WITHSCORES')
  if first[2] then wait = tonumber(first[2]) - now end
  local deadline = redis.call('ZRANGE', p..'leases', 0, 0, 'WITHSCORES')
  if deadline[2] and (wait < 0 or tonumber(deadline[2]) - now < wait) then
    wait = tonumber(deadline[2]) - now
  end
  out[1] = queued
  out[2] = leases
  out[3] = tostring(wait)
end
"""
_PRELUDE = (
    _PRELUDE.replace("__SWEEP__", str(SWEEP_LIMIT))
    .replace("__HUNGRY__", repr(HUNGRY_SECONDS))
    .replace("__VANISHED__", VANISHED)
)

ADD_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, then KEY HOST PAYLOAD for each entry; returns 1 where new
local max_pages = num(redis.call('HGET', p..'meta', 'max_pages'), 0)
local out = {}
local added = 0
for i = 2, #ARGV, 3 do
  local key, host = ARGV[i], ARGV[i + 1]
  local new = 0
  if max_pages == 0 or redis.call('SCARD', p..'seen') < max_pages then
    new = redis.call('SADD', p..'seen', key)
  end
  if new == 1 then
    redis.call('HSET', p..'items', key, ARGV[i + 2])
    redis.call('RPUSH', queue_of(host, ARGV[i + 2]), key)
    added = added + 1
    offer(host)
  end
  out[#out + 1] = new
end
if added > 0 then redis.call('HINCRBY', p..'counts', 'queued', added) end
return out
"""
)

LEASE_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, worker, how many; returns queued, leases, wait, then KEY TOKEN PAYLOAD...
local now = now_seconds()
sweep(now)
local out = {0, 0, '-1'}
lease(ARGV[2], tonumber(ARGV[3]), now, out)
state(now, out)
return out
"""
)

FINISH_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, worker, outcome (done|failed|requeue), how many to lease next, then KEY TOKEN...
-- returns queued, leases, wait, finished-ok flags as one string of 0/1, then KEY TOKEN PAYLOAD...
local worker, outcome, want = ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_seconds()
local flags = {}
for i = 5, #ARGV, 2 do
  local owner = owns(ARGV[i], ARGV[i + 1], worker)
  if owner then
    unlease(ARGV[i], owner, outcome)
    flags[#flags + 1] = '1'
  else
    if outcome ~= 'requeue' then redis.call('HINCRBY', p..'counts', 'lost', 1) end
    flags[#flags + 1] = '0'
  end
end
sweep(now)
local out = {0, 0, '-1', table.concat(flags)}
if want > 0 then lease(worker, want, now, out) end
state(now, out)
return out
"""
)

RENEW_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, worker, heartbeat JSON, then KEY TOKEN...; returns the keys no longer ours
local worker = ARGV[2]
local now = now_seconds()
local ttl = num(redis.call('HGET', p..'meta', 'lease'), 30)
local lost = {}
for i = 4, #ARGV, 2 do
  if owns(ARGV[i], ARGV[i + 1], worker) then
    redis.call('ZADD', p..'leases', 'XX', now + ttl, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
redis.call('HSET', p..'workers', worker, ARGV[3])
sweep(now)
return lost
"""
)

GIVE_BACK_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, worker, key, token, payload; the leased KEY back at the head of its host's
-- queue as if never taken, PAYLOAD its item with the tries made; 1 if it was still ours
local owner = owns(ARGV[3], ARGV[4], ARGV[2])
if not owner then return 0 end
unlease(ARGV[3], owner, 'back')
redis.call('HSET', p..'items', ARGV[3], ARGV[5])
return 1
"""
)

CLAIM_START_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, host, gap; 0 when a request to HOST may start now (a GAP after the last one
-- started, whichever process sent it), else the seconds to wait for the gap or a pause
local now = now_seconds()
local host, gap = ARGV[2], tonumber(ARGV[3])
redis.call('HSET', p..'gap', host, gap)
local at = num(redis.call('HGET', p..'started', host), -1e9) + gap
at = math.max(at, num(redis.call('HGET', p..'pause', host), 0))
if at > now then return tostring(at - now) end
redis.call('HSET', p..'started', host, now)
return '0'
"""
)

PAUSE_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, host, seconds (-1: the end of a hold); a shorter pause than the one running
-- changes nothing, and the host's queue is handed out again when it ends
local now = now_seconds()
local host, seconds = ARGV[2], tonumber(ARGV[3])
local score = now
if seconds < 0 then
  redis.call('HDEL', p..'pause', host)
  redis.call('HSET', p..'next', host, now)
else
  local ends = now + seconds
  if ends <= num(redis.call('HGET', p..'pause', host), 0) then return 0 end
  redis.call('HSET', p..'pause', host, ends)
  score = math.max(num(redis.call('HGET', p..'next', host), 0), ends)
  redis.call('HSET', p..'next', host, score)
end
redis.call('ZADD', p..'hosts', 'XX', score, host)
return 1
"""
)

ROBOTS_SCRIPT = (
    _PRELUDE
    + """
-- ARGV: prefix, origin, worker, claim ms; the stored answer, or 'mine' (this worker fetches
-- it: claimed), or 'wait' (another worker fetches it now)
local stored = redis.call('HGET', p..'robots', ARGV[2])
if stored then return stored end
if redis.call('SET', p..'robots-claim:'..ARGV[2], ARGV[3], 'NX', 'PX', ARGV[4]) then return 'mine' end
return 'wait'
"""
)

DROP_SCRIPT = (
    _PRELUDE
    + """
local out = {}
local removed = 0
for i = 3, #ARGV do
  local gone = redis.call('LREM', ARGV[2], 1, ARGV[i])
  if gone > 0 then
    redis.call('HDEL', p..'items', ARGV[i])
    removed = removed + 1
  end
  out[#out + 1] = gone
end
if removed > 0 then redis.call('HINCRBY', p..'counts', 'queued', -removed) end
if queued(string.sub(ARGV[2], #p + 3)) == 0 then
  redis.call('ZREM', p..'hosts', string.sub(ARGV[2], #p + 3))
end
return out
"""
)

# -- the frontier ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lease:
    key: str
    token: str


@dataclass
class RoundTrips:
    """Calls made to Redis, by kind: the cost model of a shared frontier."""

    add: int = 0
    lease: int = 0
    finish: int = 0
    renew: int = 0
    start: int = 0
    """Requests to a host with a gap, cleared with the whole crawl's clock of hosts."""
    other: int = 0

    @property
    def total(self) -> int:
        return self.add + self.lease + self.finish + self.renew + self.start + self.other


def encode_item(item: Item) -> str:
    fields = [item.url, item.depth, item.redirects_left, item.referrer, str(item.kind)]
    if item.tries:
        fields.append(item.tries)
    return json.dumps(fields)


def decode_item(key: str, payload: str) -> Item:
    if not payload:
        return Item(key)
    url, depth, redirects_left, referrer, kind, *tries = json.loads(payload)
    return Item(url, depth, redirects_left, referrer, LinkKind(kind), tries[0] if tries else 0)


def worker_name() -> str:
    """HOST-PID-RANDOM: unique among the crawl's workers, readable in `archiver status`."""
    host = "".join(c if c.isalnum() or c in ".-" else "-" for c in socket.gethostname()) or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class RedisFrontier(Frontier):
    """A `Frontier` in Redis shared by every worker of crawl `[plugins.redis] crawl_id`.

    It has nothing to resume (`recovered`): the leases of a stopped worker expire and go
    back to the queue by themselves.
    """

    def __init__(self, config: Config) -> None:
        settings = config.plugin_settings(NAME, RedisSettings)
        if not settings.crawl_id:
            raise ConfigError(
                f"[plugins.{NAME}] crawl_id: a Redis frontier needs --crawl-id NAME"
                " (the name every worker of the crawl shares)"
            )
        self.url = config.frontier
        self.crawl_id = settings.crawl_id
        self.prefix = prefix_for(settings.crawl_id)
        self.worker = worker_name()
        self.lease_seconds = settings.lease_seconds
        self.retry_window = max(2 * settings.lease_seconds, 5.0)
        self.round_trips = RoundTrips()
        self.lost_leases = 0
        self._meta = {
            "concurrency": str(config.per_host_concurrency),
            "delay": repr(configured_delay(config)),
            "lease": repr(settings.lease_seconds),
            "max_pages": str(config.max_pages),
        }
        self._config_text = dump_toml(config.to_toml_dict())
        self._redis: aioredis.Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._ready: deque[tuple[Item, Lease]] = deque()
        self._held: dict[Item, Lease] = {}
        self._waiting = 0
        self._refill = asyncio.Lock()
        self._arrived = asyncio.Event()
        self._next_poll = 0.0
        self._poll = POLL_MIN
        self._finished = False
        self._renewer: asyncio.Task[None] | None = None
        self._telling: set[asyncio.Task[None]] = set()
        self._pages = 0
        self._outage_since: float | None = None
        self._closing = False
        self._lost: str | None = None
        self._last_counts = Counts()
        self._control_seen = 0
        """Commands of the crawl's `control` list already read (those before this process joined
        are applied through the stored configuration)."""

    # -- lifecycle ---------------------------------------------------------------------

    async def open(self) -> None:
        client = connect(self.url)
        try:
            await client.ping()
        except CONNECTION_ERRORS as exc:
            await client.aclose()
            raise FrontierUnavailableError(
                f"cannot reach the Redis frontier at {redacted(self.url)}: {_reason(exc)}"
            ) from None
        except redis_errors.RedisError as exc:
            await client.aclose()
            raise FrontierUnavailableError(f"Redis frontier at {redacted(self.url)}: {exc}") from None
        try:
            await self._check_joinable(client)
        except BaseException:
            await client.aclose()
            raise
        self._redis = client
        for name, text in (
            ("add", ADD_SCRIPT),
            ("lease", LEASE_SCRIPT),
            ("finish", FINISH_SCRIPT),
            ("renew", RENEW_SCRIPT),
            ("drop", DROP_SCRIPT),
            ("give_back", GIVE_BACK_SCRIPT),
            ("claim_start", CLAIM_START_SCRIPT),
            ("pause", PAUSE_SCRIPT),
            ("robots", ROBOTS_SCRIPT),
        ):
            self._scripts[name] = client.register_script(text)
        try:
            async with client.pipeline(transaction=True) as pipe:
                for name, value in self._meta.items():
                    pipe.hsetnx(self.prefix + "meta", name, value)
                pipe.hsetnx(self.prefix + "meta", "created", repr(time.time()))
                pipe.set(self.prefix + "config", self._config_text, nx=True)
                pipe.hset(self.prefix + "workers", self.worker, self._heartbeat())
                pipe.llen(self.prefix + "control")
                self._control_seen = (await pipe.execute())[-1]
        except redis_errors.ResponseError as exc:  # out of memory (maxmemory), read-only replica...
            self._redis = None
            await client.aclose()
            reason = str(exc).split("caused error: ", 1)[-1].strip("(),'\"")
            raise FrontierUnavailableError(
                f"the Redis frontier at {redacted(self.url)} refused to start the crawl: {reason}"
            ) from None
        self.round_trips.other += 2
        self._renewer = asyncio.create_task(self._renew_forever(), name="archiver-redis-renew")

    async def _check_joinable(self, client: aioredis.Redis) -> None:
        """Refuse a crawl that is over, and one stored with settings other than this process's."""
        async with client.pipeline(transaction=False) as pipe:
            pipe.get(self.prefix + "config")
            pipe.hgetall(self.prefix + "counts")
            pipe.zcard(self.prefix + "leases")
            pipe.scard(self.prefix + "seen")
            stored, totals, leases, seen = await pipe.execute()
        self.round_trips.other += 1
        if stored is None:
            return
        counts = counts_from(totals, leases, seen)
        if counts.finished:
            raise CrawlFinishedError(
                f"crawl {self.crawl_id!r} at {redacted(self.url)} is finished ({counts.done} done,"
                f" {counts.failed} failed): nothing left to fetch. Start a new crawl with another"
                f" --crawl-id, or delete this one first: redis-cli -u {redacted(self.url)} --scan --pattern"
                f" 'archiver:{{{self.crawl_id}}}:*' | xargs redis-cli -u {redacted(self.url)} del"
            )
        difference = first_difference(stored, self._config_text)
        if difference is not None:
            name, theirs, ours = difference
            raise UsageError(
                f"crawl {self.crawl_id!r} at {redacted(self.url)} runs with {name} = {theirs}, not {ours}:"
                f" join it with `archiver worker --frontier {redacted(self.url)} --crawl-id"
                f" {self.crawl_id} -o ARCHIVE` (it takes the crawl's own settings), or start another"
                " crawl with a new --crawl-id"
            )

    async def close(self) -> None:
        self._closing = True
        renewer, self._renewer = self._renewer, None
        if renewer is not None:
            renewer.cancel()
            # Bounded: a cancellation lost inside the client must not hold the crawl up;
            # the renewer ends by itself once its call returns (`_closing`).
            await asyncio.wait({renewer}, timeout=RELEASE_TIMEOUT)
        client, self._redis = self._redis, None
        if client is None:
            return
        # Leases not finished here (interrupted, or taken and not handed out) go back at
        # once, so the other workers need not wait for them to expire.
        giving_back = [lease for _, lease in self._ready] + list(self._held.values())
        self._ready.clear()
        self._held.clear()
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT):
                if giving_back:
                    await self._scripts["finish"](
                        args=[self.prefix, self.worker, "requeue", 0, *_flat(giving_back)], client=client
                    )
                await client.hdel(self.prefix + "workers", self.worker)
                await client.zrem(self.prefix + "hungry", self.worker)
        except (TimeoutError, redis_errors.ResponseError, *CONNECTION_ERRORS) as exc:
            if not giving_back or self._lost is not None:
                return
            log.warning(
                "could not give back %d leases to Redis (%s): they return to the queue when they expire",
                len(giving_back),
                _reason(exc),
            )
        finally:
            with contextlib.suppress(*CONNECTION_ERRORS):
                await client.aclose()

    # -- the protocol ------------------------------------------------------------------

    async def add(self, entries: Sequence[tuple[str, Item]]) -> list[bool]:
        if not entries:
            return []
        args: list[str] = [self.prefix]
        for key, item in entries:
            args += [key, site_of(item.url), encode_item(item)]
        self.round_trips.add += 1
        flags = await self._retrying("add", self._script_call("add", args))
        added = [bool(int(flag)) for flag in flags]
        if any(added):
            # New URLs may be servable now: idle tasks of this process ask at once.
            self._next_poll = 0.0
            self._poll = POLL_MIN
            self._arrived.set()
        return added

    async def get(self) -> Item | None:
        """Hand out a leased URL; one task of this process at a time asks Redis for more.

        While nothing is servable the process looks again after a growing pause
        (`POLL_MIN` to `POLL_MAX`, shorter when a host's delay ends sooner); URLs this
        process adds, or leases arriving with a `done`, wake the waiting tasks at once.
        """
        loop = asyncio.get_running_loop()
        self._waiting += 1
        try:
            while True:
                if self._ready:
                    item, lease = self._ready.popleft()
                    self._held[item] = lease
                    return item
                if self._finished:
                    return None
                pause = self._next_poll - loop.time()
                if pause > 0:
                    self._arrived.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._arrived.wait(), pause)
                    continue
                async with self._refill:
                    if self._ready or self._finished or self._next_poll > loop.time():
                        continue
                    args = [self.prefix, self.worker, self._waiting]
                    self.round_trips.lease += 1
                    reply = await self._retrying("lease", self._script_call("lease", args))
                    if self._take(reply, 3):
                        self._poll = POLL_MIN
                        continue
                    wait = self._idle_wait(reply, self._poll)
                    if wait is None:
                        self._finished = True
                        self._arrived.set()
                        return None
                    self._next_poll = loop.time() + wait
                    self._poll = min(self._poll * 1.5, POLL_MAX)
        finally:
            self._waiting -= 1

    async def done(self, item: Item, *, failed: bool = False) -> None:
        lease = self._held.pop(item)
        self._pages += 1
        # The next lease rides on the same round trip: this worker task asks for one next.
        want = 0 if self._ready or self._finished else 1
        args = [self.prefix, self.worker, "failed" if failed else "done", want, lease.key, lease.token]
        self.round_trips.finish += 1
        reply = await self._retrying("done", self._script_call("finish", args))
        if reply[3] != "1":
            self.lost_leases += 1
            log.warning(
                "%s: the lease expired before it was done (this worker was presumed dead);"
                " another worker fetches it again: raise lease_seconds if fetches are slow",
                item.url,
            )
        self._take(reply, 4)

    # -- the hosts' clock (`politeness.SharedHosts`) -----------------------------------------

    def use_limiter(self, limiter: HostLimiter) -> bool:
        """Not a scheduling frontier (Redis hands out the hosts), but the limiter's gaps and
        pauses go through Redis, so that they hold for every process of the crawl."""
        limiter.shared = self
        return False

    async def claim_start(self, site: str, gap: float) -> float:
        self.round_trips.start += 1
        wait = await self._retrying(
            "politeness", self._script_call("claim_start", [self.prefix, site, repr(gap)])
        )
        return float(wait)

    def pause(self, site: str, seconds: float) -> None:
        self._tell(self._pause_host(site, seconds))

    async def _pause_host(self, site: str, seconds: float) -> None:
        self.round_trips.other += 1
        await self._retrying("politeness", self._script_call("pause", [self.prefix, site, repr(seconds)]))

    async def robots_of(self, origin: str) -> tuple[int, bytes] | None:
        """A claim expires after `ROBOTS_CLAIM_SECONDS`, so a process killed mid-fetch holds
        nobody up for longer."""
        args = [self.prefix, origin, self.worker, str(int(ROBOTS_CLAIM_SECONDS * 1000))]
        while True:
            self.round_trips.other += 1
            answer = str(await self._retrying("robots.txt", self._script_call("robots", args)))
            if answer == "mine":
                return None
            if answer != "wait":
                with contextlib.suppress(ValueError, KeyError, TypeError, binascii.Error):
                    stored = json.loads(answer)
                    return int(stored["status"]), base64.b64decode(stored["body"])
                return None
            await asyncio.sleep(ROBOTS_POLL_SECONDS)

    async def robots_fetched(self, origin: str, status: int, body: bytes) -> None:
        stored = json.dumps({"status": status, "body": base64.b64encode(body).decode()})

        async def call(client: aioredis.Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.hset(self.prefix + "robots", origin, stored)
                pipe.delete(self.prefix + "robots-claim:" + origin)
                await pipe.execute()

        self.round_trips.other += 1
        await self._retrying("robots.txt", call)

    async def robots_failed(self, origin: str) -> None:
        async def call(client: aioredis.Redis) -> None:
            await client.delete(self.prefix + "robots-claim:" + origin)

        self.round_trips.other += 1
        await self._retrying("robots.txt", call)

    def _tell(self, call: Coroutine[Any, Any, None]) -> None:
        """Run `call` in the background; a failure is logged (the local limiter holds meanwhile)."""
        task = asyncio.get_running_loop().create_task(call)
        self._telling.add(task)
        task.add_done_callback(self._told)

    def _told(self, task: asyncio.Task[None]) -> None:
        self._telling.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not tell Redis of a host's pause: %s", task.exception())

    async def give_back(self, item: Item, again: Item | None = None) -> bool:
        """Back at the head of its host's queue for any process to take, with its tries kept."""
        lease = self._held.pop(item)
        args = [self.prefix, self.worker, lease.key, lease.token, encode_item(again or item)]
        self.round_trips.finish += 1
        await self._retrying("give back", self._script_call("give_back", args))
        self._next_poll = 0.0
        return True

    # -- live control ------------------------------------------------------------------

    async def share(self, command: dict[str, Any], config: Config) -> None:
        """Pass `command` to every other worker, and keep what it changed for those to come:
        the stored configuration, and the global politeness the scripts apply."""
        payload = json.dumps({**command, "from": self.worker})
        verb, args = command.get("verb"), command.get("args") or []

        async def call(client: aioredis.Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.rpush(self.prefix + "control", payload)
                if verb in ("exclude", "include", "delay", "concurrency"):
                    pipe.set(self.prefix + "config", dump_toml(config.to_toml_dict()))
                if verb == "pause":
                    pipe.hset(self.prefix + "meta", "paused", command.get("id") or "1")
                elif verb == "resume":
                    pipe.hdel(self.prefix + "meta", "paused")
                elif verb == "host":
                    seconds = HELD_SECONDS if args[1] == "pause" else -1.0
                    await self._scripts["pause"](args=[self.prefix, args[0], repr(seconds)], client=pipe)
                elif verb == "delay":
                    pipe.hset(self.prefix + "meta", "delay", repr(float(args[0])))
                elif verb == "concurrency":
                    pipe.hset(self.prefix + "meta", "concurrency", str(int(args[0])))
                await pipe.execute()

        self.round_trips.other += 1
        await self._retrying("control", call)
        self._config_text = dump_toml(config.to_toml_dict())

    async def shared_commands(self) -> list[dict[str, Any]]:
        async def call(client: aioredis.Redis) -> list[str]:
            return list(map(str, await client.lrange(self.prefix + "control", self._control_seen, -1)))

        if self._redis is None:
            return []
        self.round_trips.other += 1
        found = await self._retrying("control", call)
        self._control_seen += len(found)
        commands = []
        for payload in found:
            with contextlib.suppress(ValueError):
                command = json.loads(payload)
                if isinstance(command, dict) and command.get("from") != self.worker:
                    commands.append(command)
        return commands

    async def confirm_held(self, command: dict[str, Any], on_wire: int) -> None:
        key = self.prefix + "held:" + str(command.get("id"))

        async def call(client: aioredis.Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.hset(key, self.worker, str(on_wire))
                pipe.expire(key, HELD_KEPT_SECONDS)
                await pipe.execute()

        self.round_trips.other += 1
        await self._retrying("control", call)

    async def held_everywhere(self, command: dict[str, Any]) -> Holding:
        """Every other process whose heartbeat is fresh (younger than a lease) reads the command
        within `control.POLL_SECONDS`, holds, and says so; one that does not within
        `HOLD_WAIT_SECONDS` is named (it may have been killed since its last heartbeat)."""
        key = self.prefix + "held:" + str(command.get("id"))

        async def read(client: aioredis.Redis) -> tuple[dict[str, str], dict[str, str]]:
            async with client.pipeline(transaction=False) as pipe:
                pipe.hgetall(self.prefix + "workers")
                pipe.hgetall(key)
                workers, held = await pipe.execute()
            return workers, held

        deadline = time.monotonic() + HOLD_WAIT_SECONDS
        while True:
            self.round_trips.other += 1
            workers, held = await self._retrying("control", read)
            alive = {name for name, beat in workers.items() if name != self.worker and self._alive(beat)}
            if alive <= held.keys() or time.monotonic() >= deadline:
                break
            await asyncio.sleep(HOLD_POLL_SECONDS)
        on_wire = sum(int(count) for count in held.values() if count.isdigit())
        return Holding(len(held), on_wire, tuple(sorted(alive - held.keys())))

    def _alive(self, heartbeat: str) -> bool:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            seen_at = float(json.loads(heartbeat)["seen_at"])
            return time.time() - seen_at <= self.lease_seconds
        return False

    async def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        """Every host's queue is read and the items refused removed, each by one script that
        counts it only if it was still queued (another worker may have leased it meanwhile)."""

        async def call(client: aioredis.Redis) -> list[tuple[Item, str]]:
            dropped: list[tuple[Item, str]] = []
            async for queue in client.scan_iter(match=self.prefix + "[qr]:*", count=500):
                keys = list(map(str, await client.lrange(queue, 0, -1)))
                for start in range(0, len(keys), 500):
                    dropped += await self._drop_from(client, queue, keys[start : start + 500], refusal)
            return dropped

        self.round_trips.other += 1
        return await self._retrying("drop", call)

    async def _drop_from(
        self, client: aioredis.Redis, queue: str, keys: list[str], refusal: Callable[[Item], str | None]
    ) -> list[tuple[Item, str]]:
        payloads = await client.hmget(self.prefix + "items", keys)
        refused = []
        for key, payload in zip(keys, payloads, strict=True):
            item = decode_item(key, str(payload or ""))
            reason = refusal(item)
            if reason is not None:
                refused.append((key, item, reason))
        if not refused:
            return []
        args = [self.prefix, queue, *(key for key, _, _ in refused)]
        flags = await self._scripts["drop"](args=args, client=client)
        return [(item, reason) for (_, item, reason), flag in zip(refused, flags, strict=True) if flag]

    async def counts(self) -> Counts:
        """The whole crawl's totals, with this process's share; the last known when closed."""

        async def read(client: aioredis.Redis) -> list[Any]:
            async with client.pipeline(transaction=False) as pipe:
                pipe.exists(self.prefix + "meta")
                pipe.hgetall(self.prefix + "counts")
                pipe.zcard(self.prefix + "leases")
                pipe.scard(self.prefix + "seen")
                return await pipe.execute()

        if self._redis is None:
            return self._mine(self._last_counts)
        self.round_trips.other += 1
        try:
            exists, totals, leases, seen = await self._retrying("counts", read)
            if not exists:
                self._vanish()
        except FrontierLostError:
            # Totals are for progress and reports: the last ones known, never "all done".
            last = self._last_counts
            return self._mine(dataclasses.replace(last, in_flight=max(last.in_flight, len(self._held), 1)))
        self._last_counts = counts_from(totals, leases, seen)
        return self._mine(self._last_counts)

    def _mine(self, counts: Counts) -> Counts:
        return dataclasses.replace(counts, fetching=len(self._held), this_process=self._pages)

    def _vanish(self) -> None:
        """The crawl's keys are gone from Redis: stop every call of this process, saying what was lost."""
        if self._lost is None:
            last = self._last_counts
            self._lost = (
                f"crawl {self.crawl_id!r} vanished from the Redis frontier at {redacted(self.url)}: its keys"
                f" are gone (a restart without persistence, or a flush), and with them {last.queued:,} queued"
                f" URLs and the record of {last.seen:,} seen; stopped. What was fetched is in the WARC"
                " files: `archiver merge` the workers' archives, then crawl again with a new --crawl-id"
                " (with `appendonly yes` in redis.conf a restart keeps the crawl)"
            )
        raise FrontierVanishedError(self._lost)

    # -- internals ---------------------------------------------------------------------

    def _take(self, reply: list[Any], start: int) -> int:
        taken = 0
        for i in range(start, len(reply) - 2, 3):
            key, token, payload = reply[i], reply[i + 1], reply[i + 2]
            self._ready.append((decode_item(key, payload), Lease(key, str(token))))
            taken += 1
        if taken:
            self._arrived.set()
        return taken

    def _idle_wait(self, reply: list[Any], poll: float) -> float | None:
        """How long to wait before asking again; None when the whole crawl is over."""
        queued, leases, wait = int(reply[0]), int(reply[1]), float(reply[2])
        if queued <= 0 and leases <= 0:
            return None
        if wait >= 0:
            return max(min(wait, poll), 0.002)
        return poll

    def _heartbeat(self) -> str:
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "seen_at": time.time(),
                "pages": self._pages,
                "leases": len(self._held) + len(self._ready),
            }
        )

    async def _renew_forever(self) -> None:
        interval = self.lease_seconds / 3
        while not self._closing:
            await asyncio.sleep(interval)
            client = self._redis
            if client is None or self._closing:
                return
            leases = list(self._held.values()) + [lease for _, lease in self._ready]
            self.round_trips.renew += 1
            try:
                lost = await self._scripts["renew"](
                    args=[self.prefix, self.worker, self._heartbeat(), *_flat(leases)], client=client
                )
            except CONNECTION_ERRORS as exc:
                _honour_cancel()
                if self._outage_since is None and not self._closing:
                    log.warning("could not renew %d leases in Redis: %s", len(leases), _reason(exc))
                continue
            except redis_errors.ResponseError as exc:
                if VANISHED not in str(exc):
                    raise
                # the workers find out at their next call and stop the crawl with the message
                with contextlib.suppress(FrontierVanishedError):
                    self._vanish()
                return
            _honour_cancel()
            if lost:
                log.warning("%d leases expired before renewal; other workers will fetch them", len(lost))

    def _script_call(self, name: str, args: list[Any]) -> Callable[[aioredis.Redis], Awaitable[Any]]:
        script = self._scripts[name]
        return lambda client: script(args=args, client=client)

    async def _retrying(self, what: str, call: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        """Run `call`, pausing and retrying with backoff while Redis is unreachable.

        An outage is one for all callers: it starts at the first failure and ends the
        crawl `retry_window` seconds later, after which every call fails at once.
        """
        client = self._redis
        if client is None:
            raise ArchiveError("the Redis frontier is not open")
        if self._lost is not None:
            raise FrontierLostError(self._lost)
        backoff = 0.25
        while True:
            try:
                result = await call(client)
            except CONNECTION_ERRORS as exc:
                _honour_cancel()
                now = time.monotonic()
                if self._outage_since is None:
                    self._outage_since = now
                    log.warning(
                        "Redis at %s did not answer (%s): pausing, retrying for up to %.0f s",
                        redacted(self.url),
                        _reason(exc),
                        self.retry_window,
                    )
                left = self._outage_since + self.retry_window - now
                if left <= 0:
                    self._lost = (
                        f"lost the Redis frontier at {redacted(self.url)} ({_reason(exc)}) for"
                        f" {self.retry_window:.0f} s: stopped; the WARC files are intact,"
                        f" run the worker again to rejoin crawl {self.crawl_id!r}"
                    )
                    raise FrontierLostError(self._lost) from None
                log.debug("Redis still unreachable during %s: retrying in %.1f s", what, min(backoff, left))
                await asyncio.sleep(min(backoff, left))
                backoff = min(backoff * 2, 5.0)
                continue
            except redis_errors.ResponseError as exc:
                if VANISHED in str(exc):
                    self._vanish()
                where = redacted(self.url)
                raise ArchiveError(f"the Redis frontier at {where} refused {what}: {exc}") from None
            _honour_cancel()
            if self._outage_since is not None:
                log.warning(
                    "Redis at %s answers again after %.1f s: crawling on",
                    redacted(self.url),
                    time.monotonic() - self._outage_since,
                )
                self._outage_since = None
            return result


def first_difference(stored: str, ours: str) -> tuple[str, str, str] | None:
    """(setting, stored value, our value) of the first crawl-wide setting that differs, as TOML."""
    import tomllib

    theirs_flat, ours_flat = _flat_settings(tomllib.loads(stored)), _flat_settings(tomllib.loads(ours))
    for name in sorted(theirs_flat.keys() | ours_flat.keys()):
        if name in PER_PROCESS or name.startswith(f"plugins.{NAME}."):
            continue
        theirs, mine = theirs_flat.get(name), ours_flat.get(name)
        if theirs != mine:
            return name, _shown(theirs), _shown(mine)
    return None


def _flat_settings(tables: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in tables.items():
        if isinstance(value, dict):
            flat.update(_flat_settings(value, f"{prefix}{name}."))
        else:
            flat[prefix + name] = value
    return flat


def _shown(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value)


def counts_from(totals: dict[str, str], leases: int, seen: int) -> Counts:
    return Counts(
        queued=max(int(totals.get("queued", 0)), 0),
        in_flight=int(leases),
        done=int(totals.get("done", 0)),
        failed=int(totals.get("failed", 0)),
        seen=int(seen),
    )


def _honour_cancel() -> None:
    """Raise CancelledError if this task was asked to stop.

    The Redis client may turn a cancellation that lands mid-command into a connection
    error or a normal return; without this check a cancelled caller would go on (a
    renewal loop that never ends, a retry loop during Ctrl-C).
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _flat(leases: Sequence[Lease]) -> list[str]:
    args: list[str] = []
    for lease in leases:
        args += [lease.key, lease.token]
    return args


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
