#include "partitioner/pack/packer.hpp"

#include <fnmatch.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <thread>

#include "base/mutex.hpp"
#include "partitioner/format/checksum.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/format/pack_file.hpp"
#include "partitioner/pack/memory_limit.hpp"
#include "partitioner/pack/out_dir.hpp"
#include "partitioner/pack/placement.hpp"
#include "partitioner/pack/progress.hpp"
#include "partitioner/pack/scan.hpp"

namespace clairfs::pack {
namespace {

using format::NodeRecord;

// One file to pack, in write order.
struct WorkItem {
  uint32_t entry;      // index into the scan (== manifest node index)
  uint32_t partition;  // P for the broadcast pack
  uint32_t seq = 0;    // position among the files of its partition
};

// A pack being written: opened at its first file, closed after the last worker.
struct PackSink {
  std::unique_ptr<format::BufferedWriter> writer;
  format::StreamingChecksum checksum;
  uint32_t files = 0;  // written so far; the next file to write has seq == files
  uint64_t raw_bytes = 0;
  uint64_t bytes = 0;
};

bool MatchesBroadcast(const std::vector<std::string>& globs, const std::string& path) {
  for (const std::string& g : globs) {
    // A glob may name the file or any directory above it.
    std::string prefix = path;
    for (;;) {
      if (::fnmatch(g.c_str(), prefix.c_str(), 0) == 0) return true;
      const size_t slash = prefix.rfind('/');
      if (slash == std::string::npos) break;
      prefix.resize(slash);
    }
  }
  return false;
}

class PackRun {
 public:
  PackRun(const PackOptions& o, ScanResult scan) : o_(o), scan_(std::move(scan)) {}

  Result<PackSummary> Run();

 private:
  Status Place();
  Status WriteAll();
  void Worker();
  Status Write(const WorkItem& item, const char* raw, const format::EncodedPayload& enc)
      CLAIRFS_REQUIRES(mu_);
  Status OpenSink(uint32_t p);
  Status CloseSink(uint32_t p);
  Result<std::vector<char>> BuildManifest();
  void Fail(Status st);

  const PackOptions& o_;
  ScanResult scan_;
  uint64_t dataset_id_ = 0;
  std::vector<WorkItem> work_;
  std::vector<NodeRecord> records_;  // per scan entry; file fields filled as written
  std::vector<PackSink> sinks_;      // P + 1
  PackSummary summary_;

  Mutex mu_;  // guards the sinks while workers run, the members below and all writes
  size_t next_ CLAIRFS_GUARDED_BY(mu_) = 0;    // the next work item to take
  uint64_t held_ CLAIRFS_GUARDED_BY(mu_) = 0;  // memory the taken, unwritten files may hold
  CondVar turn_;  // a file written or failed: its room and its pack's turn are free
  Status failure_ CLAIRFS_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
  Progress* progress_ = nullptr;
};

void PackRun::Fail(Status st) {
  MutexLock lock(&mu_);
  if (failure_.ok()) failure_ = std::move(st);
  failed_ = true;
  turn_.NotifyAll();
}

Status PackRun::Place() {
  const uint32_t P = o_.partitions;
  std::vector<PlacedFile> placed;
  std::vector<uint32_t> placed_entry;
  std::vector<WorkItem> bcast;
  std::vector<bool> glob_used(o_.broadcast.size());
  for (uint32_t i = 0; i < scan_.entries.size(); ++i) {
    const ScanEntry& e = scan_.entries[i];
    if (e.is_dir) continue;
    const std::string path = EntryPath(scan_.entries, i);
    if (!o_.broadcast.empty() && MatchesBroadcast(o_.broadcast, path)) {
      bcast.push_back({i, P});
      continue;
    }
    placed_entry.push_back(i);
    placed.push_back({scan_.entries[i].name, e.size});
  }
  // Policies see full relative paths; keep them alive beside the views.
  std::vector<std::string> paths(placed_entry.size());
  for (size_t k = 0; k < placed_entry.size(); ++k) {
    paths[k] = EntryPath(scan_.entries, placed_entry[k]);
    placed[k].path = paths[k];
  }
  auto policy = MakePlacement(o_.placement);
  if (!policy.ok()) return policy.status();
  std::vector<uint32_t> parts = (*policy)->Assign(placed, P);
  // Files are read and written in manifest order, which is the order of the
  // source tree: a cold source is read close to sequentially, and every pack
  // still receives its files in manifest order.
  for (size_t k = 0; k < placed_entry.size(); ++k) work_.push_back({placed_entry[k], parts[k]});
  work_.insert(work_.end(), bcast.begin(), bcast.end());
  std::sort(work_.begin(), work_.end(),
            [](const WorkItem& a, const WorkItem& b) { return a.entry < b.entry; });
  std::vector<uint32_t> seq(P + 1, 0);
  for (WorkItem& w : work_) w.seq = seq[w.partition]++;
  summary_.broadcast_files = bcast.size();
  sinks_ = std::vector<PackSink>(P + 1);
  return Status::Ok();
}

Status PackRun::OpenSink(uint32_t p) {
  PackSink& s = sinks_[p];
  // Every pack may be open at once: their buffers share a fixed budget.
  const size_t buffer = std::clamp<size_t>((256u << 20) / (o_.partitions + 1), 64u << 10, 4u << 20);
  auto w =
      format::BufferedWriter::Create(o_.out + "/" + format::PackFileName(p, o_.partitions), buffer);
  if (!w.ok()) return w.status();
  s.writer = std::move(w).value();
  const format::PackHeader h = format::MakePackHeader(dataset_id_, p);
  s.checksum.Update(&h, sizeof h);
  s.bytes = sizeof h;
  return s.writer->Append(&h, sizeof h);
}

Status PackRun::CloseSink(uint32_t p) {
  PackSink& s = sinks_[p];
  if (!s.writer) CLAIRFS_RETURN_IF_ERROR(OpenSink(p));
  return s.writer->Close(/*sync=*/true);
}

Status PackRun::Write(const WorkItem& item, const char* raw, const format::EncodedPayload& enc) {
  PackSink& s = sinks_[item.partition];
  if (!s.writer) CLAIRFS_RETURN_IF_ERROR(OpenSink(item.partition));
  const ScanEntry& e = scan_.entries[item.entry];
  const bool is_raw = enc.codec == format::Codec::kRaw;
  const char* data = is_raw ? raw : enc.bytes.data();
  const uint64_t n = is_raw ? e.size : enc.bytes.size();
  NodeRecord& r = records_[item.entry];
  r.offset = s.bytes;
  r.stored_size = n;
  r.codec = static_cast<uint8_t>(enc.codec);
  r.checksum = enc.checksum;
  r.partition = item.partition;
  if (item.partition == o_.partitions) r.flags |= format::kNodeFlagBroadcast;
  CLAIRFS_RETURN_IF_ERROR(s.writer->Append(data, n));
  s.checksum.Update(data, n);
  s.bytes += n;
  s.raw_bytes += e.size;
  ++s.files;
  return Status::Ok();
}

// A worker keeps its buffers from file to file up to this size; larger ones,
// grown for a large file, are given back (the budget counts only the files
// being packed).
constexpr size_t kKeptBufferBytes = 8u << 20;

// What a worker may hold for a file of `size` bytes: the file read whole, and
// its payload (never larger than the file plus a frame table of 16 bytes per
// frame of at least 4 KiB).
uint64_t MemoryFor(uint64_t size) { return 2 * size + size / 256 + 64; }

void PackRun::Worker() {
  format::EncodeOptions eo{o_.zstd_level, o_.frame_size, o_.min_saving};
  format::PayloadEncoder encoder(eo);
  std::vector<char> raw;
  format::EncodedPayload enc;
  for (;;) {
    size_t i = 0;
    uint64_t held = 0;
    {
      // Files are taken in order, each once its memory fits in the budget
      // beside the files taken before it; a file larger than the whole budget
      // is taken when nothing else is held, and so packed alone. Taking them
      // in order keeps the pack's order from deadlocking: the file a pack
      // waits for was taken earlier and already holds its room.
      MutexLock lock(&mu_);
      while (!(failed_ || next_ >= work_.size() || held_ == 0 ||
               held_ + MemoryFor(scan_.entries[work_[next_].entry].size) <= o_.memory)) {
        turn_.Wait(&lock);
      }
      if (failed_ || next_ >= work_.size()) return;
      i = next_++;
      held = MemoryFor(scan_.entries[work_[i].entry].size);
      held_ += held;
      summary_.peak_memory = std::max(summary_.peak_memory, held_);
    }
    const WorkItem& item = work_[i];
    const ScanEntry& e = scan_.entries[item.entry];
    Status st;
    try {
      st = format::ReadWholeFile(e.source, &raw, e.size);
      if (st.ok()) st = encoder.Encode(raw.data(), raw.size(), &enc);
    } catch (const std::bad_alloc&) {
      st = Status::IOError(e.source + ": " + HumanBytes(static_cast<double>(e.size)) +
                               " does not fit in memory (packing holds a file and its payload, "
                               "about twice its size, at once)",
                           ENOMEM);
    }
    MutexLock lock(&mu_);
    // Only the previous file of the same pack must be written first: workers
    // on other packs never wait for this one.
    while (sinks_[item.partition].files != item.seq && !failed_) turn_.Wait(&lock);
    if (failed_) return;
    if (st.ok()) st = Write(item, raw.data(), enc);
    if (!st.ok()) {
      lock.Unlock();
      Fail(st);
      return;
    }
    turn_.NotifyAll();
    lock.Unlock();
    progress_->Add(1, e.size);
    // The room is given back once the buffers are: until then the next file
    // would be read beside this one.
    if (raw.capacity() + enc.bytes.capacity() > kKeptBufferBytes) {
      std::vector<char>().swap(raw);  // (= {} would keep the capacity)
      std::vector<char>().swap(enc.bytes);
    }
    lock.Lock();
    held_ -= held;
    turn_.NotifyAll();
    lock.Unlock();
  }
}

Status PackRun::WriteAll() {
  // Twice the cores by default: while some workers wait on a cold read, the
  // others compress.
  unsigned threads =
      o_.threads ? o_.threads : 2 * std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(1, work_.size())));
  Progress progress("packing", work_.size(), scan_.total_bytes, o_.progress);
  progress_ = &progress;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back([this] { Worker(); });
  for (auto& t : pool) t.join();
  progress.Stop();
  if (failed_) {
    MutexLock lock(&mu_);
    return failure_;
  }
  // Packs are closed (and fsync'ed) only now, outside the write lock; a pack
  // that received no file still gets its header.
  for (uint32_t p = 0; p <= o_.partitions; ++p) CLAIRFS_RETURN_IF_ERROR(CloseSink(p));
  return Status::Ok();
}

Result<std::vector<char>> PackRun::BuildManifest() {
  format::ManifestBuilder b;
  for (uint32_t i = 0; i < scan_.entries.size(); ++i) {
    const ScanEntry& e = scan_.entries[i];
    NodeRecord r = records_[i];
    r.parent = e.parent;
    r.mode = e.mode;
    r.mtime_ns = e.mtime_ns;
    if (e.is_dir) {
      r.kind = static_cast<uint8_t>(format::NodeKind::kDirectory);
      r.offset = e.first_child;
      r.stored_size = e.child_count;
      ++summary_.directories;
    } else {
      r.kind = static_cast<uint8_t>(format::NodeKind::kFile);
      r.size = e.size;
      ++summary_.files;
      summary_.raw_bytes += e.size;
      summary_.stored_bytes += r.stored_size;
    }
    b.AddNode(r, e.name);
  }
  format::ManifestHeader& h = b.header();
  h.dataset_id = dataset_id_;
  h.replicas = o_.replicas;
  h.frame_size = o_.frame_size;
  h.zstd_level = static_cast<uint32_t>(o_.zstd_level);
  h.created_unix = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  for (PackSink& s : sinks_) {
    b.partitions().push_back({s.bytes, s.checksum.Digest(), s.files, 0, s.raw_bytes});
  }
  return b.Serialize();
}

Result<PackSummary> PackRun::Run() {
  const auto start = std::chrono::steady_clock::now();
  std::random_device rd;
  dataset_id_ = (uint64_t{rd()} << 32) | rd();
  records_.assign(scan_.entries.size(), NodeRecord{});
  CLAIRFS_RETURN_IF_ERROR(Place());
  CLAIRFS_RETURN_IF_ERROR(WriteAll());
  auto manifest = BuildManifest();
  if (!manifest.ok()) return manifest.status();
  CLAIRFS_RETURN_IF_ERROR(format::WriteFileAtomically(o_.out, format::kManifestName, *manifest));
  summary_.warnings = std::move(scan_.warnings);
  summary_.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary_;
}

}  // namespace

Status ValidatePackOptions(const PackOptions& o) {
  if (o.src.empty() || o.out.empty()) return Status::InvalidArgument("SRC and OUT are required");
  if (o.partitions == 0 || o.partitions > 99999) {
    return Status::InvalidArgument("--partitions " + std::to_string(o.partitions) +
                                   " is out of range (1..99999)");
  }
  if (o.replicas == 0 || o.replicas > o.partitions) {
    return Status::InvalidArgument("--replicas " + std::to_string(o.replicas) +
                                   " is out of range (1..the partition count, " +
                                   std::to_string(o.partitions) + ")");
  }
  if (o.frame_size < 4096) {
    return Status::InvalidArgument("--frame-size " + std::to_string(o.frame_size) +
                                   " is too small (at least 4096)");
  }
  if (o.memory < (1u << 20)) {
    return Status::InvalidArgument("--memory " + std::to_string(o.memory) +
                                   " is too small (at least 1M)");
  }
  if (o.threads > kMaxThreads) {
    return Status::InvalidArgument("--threads " + std::to_string(o.threads) +
                                   " is out of range (1.." + std::to_string(kMaxThreads) + ")");
  }
  if (o.zstd_level < 0 || o.zstd_level > ZSTD_maxCLevel()) {
    return Status::InvalidArgument("zstd level must be between 1 and " +
                                   std::to_string(ZSTD_maxCLevel()));
  }
  auto placement = MakePlacement(o.placement);
  if (!placement.ok())
    return Status::InvalidArgument("--placement: " + placement.status().message());
  return Status::Ok();
}

Result<int> ParseCompression(const std::string& spec) {
  if (spec == "none") return 0;
  if (spec == "zstd") return 3;
  if (spec.rfind("zstd:", 0) == 0) {
    const std::string lv = spec.substr(5);
    char* end = nullptr;
    long level = std::strtol(lv.c_str(), &end, 10);
    if (!lv.empty() && *end == '\0' && level >= 1 && level <= ZSTD_maxCLevel()) {
      return static_cast<int>(level);
    }
    return Status::InvalidArgument("bad zstd level '" + lv + "' (expected 1.." +
                                   std::to_string(ZSTD_maxCLevel()) + ")");
  }
  return Status::InvalidArgument("bad --compress '" + spec +
                                 "' (expected zstd, zstd:LEVEL or none)");
}

// Every pack may be open at once: make room for P + 1 descriptors and the
// workers' source files.
Status RaiseOpenFileLimit(uint32_t partitions) {
  const rlim_t need = rlim_t{partitions} + 256;
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return Status::FromErrno(errno, "getrlimit");
  if (rl.rlim_cur >= need) return Status::Ok();
  rl.rlim_cur = std::min(need, rl.rlim_max);
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need) {
    return Status::InvalidArgument(std::to_string(partitions) + " partitions need " +
                                   std::to_string(need) + " open files, the limit is " +
                                   std::to_string(rl.rlim_max) +
                                   " (raise `ulimit -n` or use fewer partitions)");
  }
  return Status::Ok();
}

Result<PackSummary> Pack(const PackOptions& options) {
  CLAIRFS_RETURN_IF_ERROR(ValidatePackOptions(options));
  CLAIRFS_RETURN_IF_ERROR(RaiseOpenFileLimit(options.partitions));
  if (auto p = MakePlacement(options.placement); !p.ok()) return p.status();
  bool created = false;
  CLAIRFS_RETURN_IF_ERROR(PrepareOutDir(options.src, options.out, options.force, &created));
  auto scan = ScanTree(options.src, options.external_links);
  if (!scan.ok()) {
    RemovePartialOutput(options.out, created);
    return scan.status();
  }
  // Under a cgroup memory limit the budget is at most half of it, and a file
  // that cannot be packed within the limit is refused before anything is
  // written (the kernel would otherwise kill the run part way).
  PackOptions effective = options;
  if (const uint64_t limit = CgroupMemoryLimit(); limit != UINT64_MAX) {
    const ScanEntry* largest = nullptr;
    for (const ScanEntry& e : scan->entries) {
      if (!e.is_dir && (!largest || e.size > largest->size)) largest = &e;
    }
    if (largest && MemoryFor(largest->size) > limit) {
      RemovePartialOutput(options.out, created);
      return Status::IOError(
          largest->source + ": packing it needs about " +
              HumanBytes(static_cast<double>(MemoryFor(largest->size))) +
              " (the file and its payload), more than the " +
              HumanBytes(static_cast<double>(limit)) +
              " this process may use (its cgroup's memory limit); pack where more is allowed",
          ENOMEM);
    }
    effective.memory = std::clamp<uint64_t>(limit / 2, 1u << 20, options.memory);
  }
  PackRun run(effective, std::move(scan).value());
  auto result = run.Run();
  if (!result.ok()) RemovePartialOutput(options.out, created);
  return result;
}

}  // namespace clairfs::pack
