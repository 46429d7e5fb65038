#include "fs/core/stats.hpp"

#include <cstdio>

namespace clairfs::fs {
namespace {

uint64_t Get(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }

}  // namespace

std::string StatsJson(const Stats& s, const CacheStats& c, double uptime_s) {
  char buf[2048];
  std::snprintf(
      buf, sizeof buf,
      "{\n"
      "  \"uptime_s\": %.3f,\n"
      "  \"served\": {\n"
      "    \"page_cache\": null,\n"
      "    \"ram_cache\": {\"requests\": %llu, \"bytes\": %llu},\n"
      "    \"local_pack\": {\"requests\": %llu, \"bytes\": %llu}\n"
      "  },\n"
      "  \"local_pack\": {\"files_loaded\": %llu, \"blocks_loaded\": %llu, "
      "\"decoded_bytes\": %llu, \"decode_s\": %.6f},\n"
      "  \"coalesced_waits\": %llu,\n"
      "  \"errors\": {\"corruption\": %llu, \"io\": %llu},\n"
      "  \"ram_cache\": {\"capacity_bytes\": %llu, \"bytes\": %llu, \"entries\": %llu, "
      "\"hits\": %llu, \"misses\": %llu, \"inserts\": %llu, \"evictions\": %llu, "
      "\"evicted_bytes\": %llu, \"rejected\": %llu},\n"
      "  \"requests\": {\"lookup\": %llu, \"getattr\": %llu, \"readdir\": %llu, "
      "\"open\": %llu, \"read\": %llu}\n"
      "}\n",
      uptime_s, (unsigned long long)Get(s.ram_requests), (unsigned long long)Get(s.ram_bytes),
      (unsigned long long)Get(s.pack_requests), (unsigned long long)Get(s.pack_bytes),
      (unsigned long long)Get(s.pack_files_loaded), (unsigned long long)Get(s.pack_block_loads),
      (unsigned long long)Get(s.pack_decoded_bytes), static_cast<double>(Get(s.decode_ns)) / 1e9,
      (unsigned long long)Get(s.coalesced_waits), (unsigned long long)Get(s.corruption_errors),
      (unsigned long long)Get(s.io_errors), (unsigned long long)c.capacity_bytes,
      (unsigned long long)c.bytes, (unsigned long long)c.entries, (unsigned long long)c.hits,
      (unsigned long long)c.misses, (unsigned long long)c.inserts, (unsigned long long)c.evictions,
      (unsigned long long)c.evicted_bytes, (unsigned long long)c.rejected,
      (unsigned long long)Get(s.lookups), (unsigned long long)Get(s.getattrs),
      (unsigned long long)Get(s.readdirs), (unsigned long long)Get(s.opens),
      (unsigned long long)Get(s.reads));
  return buf;
}

}  // namespace clairfs::fs
