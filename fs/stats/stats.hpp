// Counters of the data path, shown in MNT/.clairfs/stats.json.
//
// Thread-safe: every counter is a relaxed atomic, bumped on the hot path
// without a lock; a snapshot may mix values from slightly different instants.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "base/json.hpp"

namespace clairfs::fs {

// Who counts what: the Vfs counts the requests that reach the daemon and the
// READs it answered with bytes (by source); the FileReader counts block loads,
// their waits and failures, whoever asked (a READ or a prefetch fetch). The
// prefetch engine counts its fetches itself (PrefetchEngine), so a fetch is
// never a READ here.
struct Stats {
  // READ requests of dataset files answered with bytes, by where the bytes
  // came from. A READ touching several blocks counts once, under the slowest
  // source it needed (the RAM cache only when every block was there).
  std::atomic<uint64_t> reads_from_ram{0}, read_bytes_from_ram{0};
  std::atomic<uint64_t> reads_from_pack{0}, read_bytes_from_pack{0};
  // Blocks (whole small files, or frames of framed files) loaded from a pack:
  // decoded bytes produced, and the time reading + verifying + decoding took.
  std::atomic<uint64_t> pack_block_loads{0}, pack_files_loaded{0};
  std::atomic<uint64_t> pack_decoded_bytes{0};
  std::atomic<uint64_t> decode_ns{0};
  // Block reads (by a READ or a fetch) that waited for another thread's load
  // of the same block.
  std::atomic<uint64_t> coalesced_waits{0};
  // Loads that failed (answered with an errno): corruption (EIO), other I/O errors.
  std::atomic<uint64_t> corruption_errors{0}, io_errors{0};
  // Requests that reached the daemon: namespace traffic, and READs of
  // dataset files (whatever the kernel's page cache did not have), counted
  // on arrival, whether they were then answered with bytes or not.
  std::atomic<uint64_t> lookups{0}, getattrs{0}, readdirs{0}, opendirs{0}, opens{0}, reads{0};
  // The reading thread (fuse_spin_us): requests it found while still looking
  // before sleeping, and the time it spent looking.
  std::atomic<uint64_t> found_awake{0}, spin_ns{0};

  static void Add(std::atomic<uint64_t>& c, uint64_t v) {
    c.fetch_add(v, std::memory_order_relaxed);
  }
};

// What the cache reports about itself (RamCache::Snapshot).
struct CacheStats {
  uint64_t capacity_bytes = 0;
  uint64_t bytes = 0;
  uint64_t entries = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;
  uint64_t evicted_bytes = 0;
  uint64_t rejected = 0;  // blocks larger than the room there is, served but not kept
  uint64_t declined = 0;  // blocks of files the owner does not keep, served but not kept
  uint64_t peak_bytes = 0;
  bool owned = false;  // a FileOwner (the prefetch planner) decides what stays
};

// stats.json is one JSON object (documented in docs/fuse.md): the data
// path's members below, then one member per section a part of the daemon
// contributes. A section writes its members into the object opened for it.
using StatsSection = std::function<void(clairfs::JsonWriter&)>;

// The data path's members (uptime, served, local_pack, errors, ram_cache,
// requests), written into the document's open top-level object.
void WriteDataPathStats(clairfs::JsonWriter& w, const Stats& stats, const CacheStats& cache,
                        double uptime_s);

}  // namespace clairfs::fs
