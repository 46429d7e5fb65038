// ReportedOrders: what the training job's reporters told the daemon
// (docs/report.md): the dataset tables, the files worker processes learned,
// the aliases, and per main process the complete segments of draw order.
//
// Paths are resolved through the manifest only, when they arrive (a path that
// is not a file of the dataset - absolute, with "." or "..", a directory,
// missing - is counted as unresolved and kept as nothing); a segment's indices
// are turned into files when it is asked for, so files learned after the
// segment arrived count. Everything held is charged against
// ReportLimits::memory_bytes (the sizes of its strings and vectors and a fixed
// cost per map entry); a frame that would pass it is refused with NoSpace.
//
// Each connection feeds its bytes through its own Connection (from Connect()),
// which decodes them (ReportDecoder) and stores the frames; what a connection
// stored stays after it closes, except a segment it left incomplete.
//
// Thread-safe: mu_ guards everything stored (a leaf lock; the listener is
// called without it). A Connection is single-thread and must not outlive
// its ReportedOrders.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/json.hpp"
#include "base/mutex.hpp"
#include "base/status.hpp"
#include "fs/report/report_decoder.hpp"
#include "fs/report/report_limits.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

// A reporting process, as its HELLO described it (absent integers are -1).
struct ReporterInfo {
  std::string role;
  int64_t pid = -1;
  int64_t rank = -1;
  int64_t world_size = -1;
  int64_t local_rank = -1;
  int64_t local_size = -1;
  std::string framework;
};

struct ReportedSegment {
  uint64_t stream = 0;
  uint64_t epoch = 0;
  // Manifest node ids in draw order; an index with several files gives them
  // in order; an index without a resolvable file gives none.
  std::vector<uint32_t> files;
  uint64_t unresolved = 0;  // indices that gave no file
  // Of those, indices of a table without paths for them (a Dataset whose
  // files are learned from its opens) that no process has learned yet.
  uint64_t unlearned = 0;
  // The loader's shape as its LOADER frame said (-1: not said).
  int64_t batch_size = -1, num_workers = -1, prefetch_factor = -1;
  // A model's read window (ReportedModel::window): opens come anywhere
  // within this many files of the order; 1 for reported orders.
  uint64_t read_window = 1;
};

// What a SETTINGS frame becomes (the daemon's sampler models make it): the
// files of each epoch of the loader, for the rank the frame named.
struct ReportedModel {
  // Manifest node ids (files) in read order, for the loader's epoch `epoch`.
  std::function<Result<std::vector<uint32_t>>(uint64_t epoch)> files;
  // How far out of order the loader's opens may come, in files (1: the
  // order is exact); the shape of its segments when no LOADER said one.
  uint64_t window = 1;
  // What the model holds, charged while its connection lives.
  uint64_t memory_bytes = 0;
};
// Makes the model of a SETTINGS frame's keys and values; an error refuses it
// (the connection stays: its EPOCH frames are ignored).
using ModelMaker =
    std::function<Result<ReportedModel>(const std::map<std::string, std::string>& settings)>;

class ReportedOrders {
 public:
  class Connection;
  // Loaders with SETTINGS on one connection at most; more closes it.
  static constexpr size_t kMaxModels = 16;
  // The highest EPOCH a model is asked for (some models walk every epoch
  // before it); a higher one is refused, counted as a model error.
  static constexpr uint64_t kMaxModelEpoch = 100000;

  ReportedOrders(std::shared_ptr<const format::Manifest> manifest, ReportLimits limits = {});
  ~ReportedOrders();
  ReportedOrders(const ReportedOrders&) = delete;
  ReportedOrders& operator=(const ReportedOrders&) = delete;

  // A new connection's decoder and state (counted as accepted).
  std::unique_ptr<Connection> Connect();
  // A connection closed at accept (another user, or over the connection limit).
  void CountRefused();

  // Main processes with at least one complete segment, in the order of their
  // first complete segment.
  std::vector<uint64_t> Processes() const;
  // What the latest HELLO of process `pid` said.
  std::optional<ReporterInfo> Info(uint64_t pid) const;
  // Complete segments process `pid` reported so far (dropped ones included).
  uint64_t SegmentCount(uint64_t pid) const;
  // Segment `seq` (0, 1, ... in order of completion) of process `pid`,
  // resolved now. Unavailable when seq >= SegmentCount(pid) (not reported
  // yet), NotFound when it was dropped (only the latest kept_segments stay).
  Result<ReportedSegment> Segment(uint64_t pid, uint64_t seq) const;
  // The guess at segment `seq` of process `pid` while it is not reported
  // yet (seq == SegmentCount(pid)): the process's GUESS, or for a model's
  // loader one EPOCH past its last by the step between its last two (after
  // its first, the epochs 1 and 2 past it, their files in turn); the first
  // made after the latest segment stays. Unavailable without one.
  // Prefetching may start on it; only the reported segment is followed.
  Result<ReportedSegment> Guess(uint64_t pid, uint64_t seq) const;
  // The loader and its epoch (stream, epoch) of segment `seq` of process
  // `pid`, without resolving its files; nullopt when not kept or not there.
  std::optional<std::pair<uint64_t, uint64_t>> SegmentLoader(uint64_t pid, uint64_t seq) const;
  // Called (without the lock, from the connection's thread) after every
  // completed segment. Set it before the server starts, or from any thread.
  void SetListener(std::function<void()> f);
  // Makes the models of SETTINGS frames; without one they are refused. Set
  // it before the server starts.
  void SetModelMaker(ModelMaker f);

  // The members of stats.json's report section (docs/report.md).
  void WriteStats(JsonWriter& w) const;
  uint64_t memory_bytes() const;
  const ReportLimits& limits() const { return limits_; }

 private:
  struct Table {
    std::vector<uint32_t> entries;                                // node id or kNone, per index
    std::unordered_map<uint32_t, std::vector<uint32_t>> learned;  // index -> files
  };
  struct StoredSegment {
    uint64_t table = 0;  // as reported (an alias is followed when resolved)
    uint64_t stream = 0;
    uint64_t epoch = 0;
    std::vector<uint32_t> indices;
    int64_t batch_size = -1, num_workers = -1, prefetch_factor = -1;  // LOADER's
    uint64_t read_window = 1;                                         // a model's
  };
  struct Process {
    ReporterInfo info;
    uint64_t completed = 0;
    std::deque<StoredSegment> kept;      // the latest, oldest first
    std::optional<StoredSegment> guess;  // at segment `completed`, charged
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  // What a hash or tree map spends on an entry beyond its value: node, links,
  // bucket slot.
  static constexpr uint64_t kEntryCost = 64;
  // The capacity after appending `n` to `v` when it reserves as below.
  static size_t GrownCapacity(const std::vector<uint32_t>& v, size_t n);
  // The table of a segment whose indices are manifest nodes (an EPOCH's).
  static constexpr uint64_t kNodesTable = UINT64_MAX;

  // The frames of a connection (called by its Connection).
  Status AddHello(const ReporterInfo& info) CLAIRFS_EXCLUDES(mu_);
  Status AddTablePaths(const ReportTablePaths& m) CLAIRFS_EXCLUDES(mu_);
  Status AddTableFiles(const ReportTableFiles& m) CLAIRFS_EXCLUDES(mu_);
  Status AddAlias(const ReportAlias& m) CLAIRFS_EXCLUDES(mu_);
  // Takes a segment completed by a connection (charged to it until now);
  // returns its seq. Drops the process's guess.
  uint64_t AddSegment(uint64_t pid, StoredSegment segment) CLAIRFS_EXCLUDES(mu_);
  // Keeps `guess` as the guess at segment `seq` of `pid` if that is still
  // the next one and the memory allows; tells the listener.
  void SetGuess(uint64_t pid, uint64_t seq, StoredSegment guess) CLAIRFS_EXCLUDES(mu_);
  ReportedSegment Resolve(const StoredSegment& s) const CLAIRFS_REQUIRES(mu_);
  // A SETTINGS frame's model, made (counted) or refused (the first refusal
  // kept for stats.json; true when `why` is it, the caller logs it).
  Result<ReportedModel> MakeModel(const std::map<std::string, std::string>& settings)
      CLAIRFS_EXCLUDES(mu_);
  bool CountModelError(const Status& why) CLAIRFS_EXCLUDES(mu_);
  // Charges `bytes` more, or refuses (NoSpace, counted) past the limit.
  Status Charge(uint64_t bytes) CLAIRFS_REQUIRES(mu_);
  Status Reserve(uint64_t bytes) CLAIRFS_EXCLUDES(mu_);
  void Release(uint64_t bytes) CLAIRFS_EXCLUDES(mu_);
  void CountFed(size_t bytes, uint64_t frames) CLAIRFS_EXCLUDES(mu_);
  // True when `why` is the daemon's first connection error.
  bool CountClosed(const Status& why) CLAIRFS_EXCLUDES(mu_);
  // The node of a dataset file, or kNone.
  uint32_t ResolvePath(std::string_view path) const;
  uint64_t Canonical(uint64_t table) const CLAIRFS_REQUIRES(mu_);
  // What a kept segment costs (a segment in progress costs kEntryCost more).
  static uint64_t SegmentBytes(const StoredSegment& s);

  const std::shared_ptr<const format::Manifest> manifest_;
  const ReportLimits limits_;

  mutable Mutex mu_;
  std::unordered_map<uint64_t, Table> tables_ CLAIRFS_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, uint64_t> aliases_ CLAIRFS_GUARDED_BY(mu_);
  std::map<uint64_t, Process> processes_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<uint64_t> process_order_ CLAIRFS_GUARDED_BY(mu_);
  std::function<void()> listener_ CLAIRFS_GUARDED_BY(mu_);
  ModelMaker model_maker_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t models_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t model_errors_ CLAIRFS_GUARDED_BY(mu_) = 0;
  std::string first_model_error_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t memory_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t accepted_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t refused_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t open_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t closed_bad_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t frames_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t bytes_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t segments_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t unresolved_paths_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t memory_refusals_ CLAIRFS_GUARDED_BY(mu_) = 0;
  bool failed_ CLAIRFS_GUARDED_BY(mu_) = false;
  std::string first_error_ CLAIRFS_GUARDED_BY(mu_);
};

// One connection: its decoder, what its HELLO said, its segments in
// progress. Single-thread.
class ReportedOrders::Connection : private ReportSink {
 public:
  ~Connection() override;  // releases the segments left incomplete
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Decodes and stores the next bytes of the connection. The first error is
  // final (the caller closes the connection and calls Close with it).
  Status Feed(const char* data, size_t size);
  // The connection ended, cleanly (OK) or not. True when `why` is the
  // daemon's first connection error (the caller logs it). Called once.
  bool Close(const Status& why);
  // Bytes buffered by the decoder (a frame in progress).
  size_t buffered() const { return decoder_.buffered(); }

 private:
  friend class ReportedOrders;
  explicit Connection(ReportedOrders* orders);

  Status OnHello(const ReportHello& m) override;
  Status OnTablePaths(const ReportTablePaths& m) override;
  Status OnTableFiles(const ReportTableFiles& m) override;
  Status OnAlias(const ReportAlias& m) override;
  Status OnOrder(const ReportOrder& m) override;
  Status OnLoader(const ReportLoader& m) override;
  Status OnSettings(const ReportSettings& m) override;
  Status OnEpoch(const ReportEpoch& m) override;

  ReportedOrders* const orders_;
  ReportDecoder decoder_;
  bool main_ = false;  // role=main with a pid: may report ORDER
  uint64_t pid_ = 0;
  std::map<uint64_t, StoredSegment> partial_;        // stream -> segment in progress
  std::map<uint64_t, StoredSegment> guess_partial_;  // stream -> GUESS in progress
  std::map<uint64_t, ReportLoader> loaders_;  // stream -> its LOADER (charged as map entries)
  // stream -> its SETTINGS' model; nullopt when refused (its EPOCHs ignored).
  std::map<uint64_t, std::optional<ReportedModel>> models_;
  std::map<uint64_t, uint64_t> last_epoch_;  // stream -> its last EPOCH (with a model)
  uint64_t partial_bytes_ = 0;               // charged for partial_ and guess_partial_
  bool closed_ = false;
};

}  // namespace clairfs::fs
