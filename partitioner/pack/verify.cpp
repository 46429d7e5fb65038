#include "partitioner/pack/verify.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/mutex.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/format/pack_file.hpp"
#include "partitioner/pack/progress.hpp"
#include "partitioner/pack/scan.hpp"

namespace clairfs::pack {
namespace {

using format::Manifest;

// Bytes of a framed file compared at a time (a whole number of default frames).
constexpr uint64_t kChunkBytes = 8u << 20;

// Compares file contents on `threads` workers; differences are appended under a lock.
class ContentCheck {
 public:
  ContentCheck(const VerifyOptions& o, const Manifest& m, const ScanResult& scan,
               std::vector<std::pair<uint32_t, uint32_t>> pairs, VerifyReport* report)
      : o_(o), m_(m), scan_(scan), pairs_(std::move(pairs)), report_(report) {}

  void Run() {
    packs_.resize(m_.partition_count() + 1);
    for (uint32_t p = 0; p <= m_.partition_count(); ++p) {
      auto f = format::OpenPack(o_.out, m_, p);
      if (f.ok()) {
        packs_[p] = std::move(f).value();
      } else {
        Note(f.status().message());
      }
    }
    uint64_t total = 0;
    for (auto& pr : pairs_) total += m_.node(pr.first).size;
    Progress progress("verifying", pairs_.size(), total, o_.progress);
    progress_ = &progress;
    unsigned threads = o_.threads ? o_.threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back([this] { Worker(); });
    for (auto& t : pool) t.join();
    progress.Stop();
  }

 private:
  void Note(std::string msg) {
    MutexLock lock(&mu_);
    report_->differences.push_back(std::move(msg));
  }

  void Worker() {
    format::PayloadDecoder decoder;
    std::vector<char> packed, source;
    for (;;) {
      const size_t k = next_.fetch_add(1);
      if (k >= pairs_.size()) return;
      const auto [node, entry] = pairs_[k];
      const format::NodeRecord& r = m_.node(node);
      const std::string path = Printable(m_.Path(node));
      const std::string what = path + " in " + m_.PackName(r.partition);
      if (!packs_[r.partition]) {
        Note(what + ": not checked, its pack could not be opened");
        continue;
      }
      bool compared = true;
      const std::string problem =
          Compare(decoder, *packs_[r.partition], r, scan_.entries[entry].source, path, what,
                  &packed, &source, &compared);
      if (!problem.empty()) Note(problem);
      if (!compared) continue;
      {
        MutexLock lock(&mu_);
        ++report_->files;
        report_->bytes += r.size;
      }
      progress_->Add(1, r.size);
    }
  }

  // The file's bytes in the pack against its source, a chunk at a time, so a
  // file of any size is checked in bounded memory (a raw or zstd payload, at
  // most the frame size, in one piece: its one checksum covers it whole).
  // Returns what differs, "" when nothing does; `*compared` false when the
  // pack's bytes could not be decoded or the source's not read.
  static std::string Compare(format::PayloadDecoder& decoder, const format::RandomAccessFile& pack,
                             const format::NodeRecord& r, const std::string& source_path,
                             const std::string& path, const std::string& what,
                             std::vector<char>* packed, std::vector<char>* source, bool* compared) {
    const auto loc = format::PayloadLocation::Of(r);
    const uint64_t chunk = loc.codec == format::Codec::kFramed ? kChunkBytes : loc.size;
    auto src = format::PosixRandomAccessFile::Open(source_path);
    if (!src.ok()) {
      *compared = false;
      return path + ": cannot read the source: " + src.status().message();
    }
    if ((*src)->size() != loc.size) {  // changed since it was listed
      return path + ": size is " + std::to_string(loc.size) + " in the pack, " +
             std::to_string((*src)->size()) + " in the source";
    }
    for (uint64_t off = 0; off < loc.size; off += chunk) {
      const size_t n = static_cast<size_t>(std::min(chunk, loc.size - off));
      packed->resize(n);
      source->resize(n);
      auto got = decoder.Read(pack, loc, off, n, packed->data(), what);
      if (!got.ok() || *got != n) {
        *compared = false;
        return got.ok() ? what + ": decoded " + std::to_string(*got) + " bytes at " +
                              std::to_string(off) + ", not " + std::to_string(n)
                        : got.status().ToString();
      }
      Status st = (*src)->ReadExact(off, n, source->data());
      if (!st.ok()) {
        *compared = false;
        return path + ": cannot read the source: " + st.message();
      }
      if (*packed != *source) {
        const auto mis = std::mismatch(packed->begin(), packed->end(), source->begin());
        return path + ": content differs from the source (first at byte " +
               std::to_string(off + static_cast<uint64_t>(mis.first - packed->begin())) + ")";
      }
    }
    return "";
  }

  const VerifyOptions& o_;
  const Manifest& m_;
  const ScanResult& scan_;
  std::vector<std::pair<uint32_t, uint32_t>> pairs_;  // (manifest node, scan entry)
  VerifyReport* report_ CLAIRFS_PT_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<format::PosixRandomAccessFile>> packs_;
  std::atomic<size_t> next_{0};
  Mutex mu_;
  Progress* progress_ = nullptr;
};

}  // namespace

Result<VerifyReport> Verify(const VerifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  auto loaded = Manifest::Load(o.out);
  if (!loaded.ok()) return loaded.status();
  const Manifest& m = **loaded;
  auto scanned = ScanTree(o.src, o.external_links);
  if (!scanned.ok()) return scanned.status();
  const ScanResult& scan = *scanned;
  VerifyReport report;

  for (uint32_t p = 0; p <= m.partition_count(); ++p) {
    Status st = format::VerifyPackChecksum(o.out, m, p);
    if (!st.ok() && !st.IsNotFound()) report.differences.push_back(st.message());
  }

  std::unordered_map<std::string, uint32_t> source;
  for (uint32_t i = 1; i < scan.entries.size(); ++i) source.emplace(EntryPath(scan.entries, i), i);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t i = 1; i < m.node_count(); ++i) {
    const std::string path = m.Path(i);
    const std::string shown = Printable(path);
    auto it = source.find(path);
    if (it == source.end()) {
      report.differences.push_back(shown + ": in the pack but not in the source");
      continue;
    }
    const uint32_t entry = it->second;
    const ScanEntry& e = scan.entries[entry];
    source.erase(it);
    const format::NodeRecord& r = m.node(i);
    if (e.is_dir != m.IsDirectory(i)) {
      report.differences.push_back(shown + ": a " + (e.is_dir ? "directory" : "file") +
                                   " in the source, a " + (e.is_dir ? "file" : "directory") +
                                   " in the pack");
      continue;
    }
    if (r.mode != e.mode) report.differences.push_back(shown + ": mode differs");
    if (r.mtime_ns != e.mtime_ns) report.differences.push_back(shown + ": mtime differs");
    if (e.is_dir) continue;
    if (r.size != e.size) {
      report.differences.push_back(shown + ": size is " + std::to_string(r.size) +
                                   " in the pack, " + std::to_string(e.size) + " in the source");
      continue;
    }
    pairs.emplace_back(i, entry);
  }
  std::vector<std::string> extra;
  for (const auto& kv : source) {
    extra.push_back(Printable(kv.first) + ": in the source but not in the pack");
  }
  std::sort(extra.begin(), extra.end());
  report.differences.insert(report.differences.end(), extra.begin(), extra.end());

  ContentCheck(o, m, scan, std::move(pairs), &report).Run();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace clairfs::pack
