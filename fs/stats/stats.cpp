#include "fs/stats/stats.hpp"

namespace clairfs::fs {
namespace {

uint64_t Get(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }

}  // namespace

void WriteDataPathStats(clairfs::JsonWriter& w, const Stats& s, const CacheStats& c,
                        double uptime_s) {
  w.Number("uptime_s", uptime_s);
  w.BeginObject("served")
      .Null("page_cache")
      .BeginObject("ram_cache")
      .Integer("reads", Get(s.reads_from_ram))
      .Integer("bytes", Get(s.read_bytes_from_ram))
      .EndObject()
      .BeginObject("local_pack")
      .Integer("reads", Get(s.reads_from_pack))
      .Integer("bytes", Get(s.read_bytes_from_pack))
      .EndObject()
      .EndObject();
  w.BeginObject("local_pack")
      .Integer("files_loaded", Get(s.pack_files_loaded))
      .Integer("blocks_loaded", Get(s.pack_block_loads))
      .Integer("decoded_bytes", Get(s.pack_decoded_bytes))
      .Number("decode_s", static_cast<double>(Get(s.decode_ns)) / 1e9)
      .EndObject();
  w.Integer("coalesced_waits", Get(s.coalesced_waits));
  w.BeginObject("errors")
      .Integer("corruption", Get(s.corruption_errors))
      .Integer("io", Get(s.io_errors))
      .EndObject();
  w.BeginObject("ram_cache")
      .String("kept_by", c.owned ? "planner" : "lru")
      .Integer("capacity_bytes", c.capacity_bytes)
      .Integer("bytes", c.bytes)
      .Integer("peak_bytes", c.peak_bytes)
      .Integer("entries", c.entries)
      .Integer("hits", c.hits)
      .Integer("misses", c.misses)
      .Integer("inserts", c.inserts)
      .Integer("evictions", c.evictions)
      .Integer("evicted_bytes", c.evicted_bytes)
      .Integer("rejected", c.rejected)
      .Integer("declined", c.declined)
      .EndObject();
  w.BeginObject("requests")
      .Integer("lookup", Get(s.lookups))
      .Integer("getattr", Get(s.getattrs))
      .Integer("readdir", Get(s.readdirs))
      .Integer("opendir", Get(s.opendirs))
      .Integer("open", Get(s.opens))
      .Integer("read", Get(s.reads))
      .Integer("found_awake", Get(s.found_awake))
      .Number("spin_s", static_cast<double>(Get(s.spin_ns)) / 1e9)
      .EndObject();
}

}  // namespace clairfs::fs
