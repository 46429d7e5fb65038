#include "fs/report/reported_orders.hpp"

#include <algorithm>
#include <utility>

#include "base/log.hpp"

namespace clairfs::fs {
namespace {

uint64_t VectorBytes(const std::vector<uint32_t>& v) { return uint64_t{v.capacity()} * 4; }

}  // namespace

size_t ReportedOrders::GrownCapacity(const std::vector<uint32_t>& v, size_t n) {
  return v.size() + n <= v.capacity() ? v.capacity() : std::max(v.capacity() * 2, v.size() + n);
}

ReportedOrders::ReportedOrders(std::shared_ptr<const format::Manifest> manifest,
                               ReportLimits limits)
    : manifest_(std::move(manifest)), limits_(limits) {}

ReportedOrders::~ReportedOrders() = default;

std::unique_ptr<ReportedOrders::Connection> ReportedOrders::Connect() {
  {
    MutexLock lock(&mu_);
    ++accepted_;
    ++open_;
  }
  return std::unique_ptr<Connection>(new Connection(this));
}

void ReportedOrders::CountRefused() {
  MutexLock lock(&mu_);
  ++refused_;
}

uint64_t ReportedOrders::SegmentBytes(const StoredSegment& s) {
  return sizeof(StoredSegment) + VectorBytes(s.indices);
}

Status ReportedOrders::Charge(uint64_t bytes) {
  if (bytes > limits_.memory_bytes || memory_ > limits_.memory_bytes - bytes) {
    ++memory_refusals_;
    return Status::NoSpace("report memory full: " + std::to_string(memory_) + " of " +
                           std::to_string(limits_.memory_bytes) + " bytes held, " +
                           std::to_string(bytes) + " more refused");
  }
  memory_ += bytes;
  return Status::Ok();
}

Status ReportedOrders::Reserve(uint64_t bytes) {
  MutexLock lock(&mu_);
  return Charge(bytes);
}

void ReportedOrders::Release(uint64_t bytes) {
  MutexLock lock(&mu_);
  memory_ -= std::min(bytes, memory_);
}

void ReportedOrders::CountFed(size_t bytes, uint64_t frames) {
  MutexLock lock(&mu_);
  bytes_ += bytes;
  frames_ += frames;
}

bool ReportedOrders::CountClosed(const Status& why) {
  MutexLock lock(&mu_);
  --open_;
  if (why.ok()) return false;
  ++closed_bad_;
  if (failed_) return false;
  failed_ = true;
  first_error_ = why.ToString();
  return true;
}

uint32_t ReportedOrders::ResolvePath(std::string_view path) const {
  // Relative, with no empty, "." or ".." component: anything else is not a
  // name the manifest could hold, and is never looked up elsewhere.
  if (path.empty() || path.front() == '/') return kNone;
  for (size_t pos = 0; pos <= path.size();) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view part = path.substr(pos, slash - pos);
    if (part.empty() || part == "." || part == "..") return kNone;
    pos = slash + 1;
  }
  auto node = manifest_->Resolve(path);
  if (!node.ok() || manifest_->IsDirectory(*node)) return kNone;
  return *node;
}

uint64_t ReportedOrders::Canonical(uint64_t table) const {
  // AddAlias never closes a cycle; the bound is a guard only.
  for (int i = 0; i < 64; ++i) {
    auto it = aliases_.find(table);
    if (it == aliases_.end()) break;
    table = it->second;
  }
  return table;
}

Status ReportedOrders::AddHello(const ReporterInfo& info) {
  MutexLock lock(&mu_);
  auto it = processes_.find(static_cast<uint64_t>(info.pid));
  const uint64_t strings = info.role.size() + info.framework.size();
  if (it == processes_.end()) {
    CLAIRFS_RETURN_IF_ERROR(Charge(kEntryCost + sizeof(Process) + strings));
    processes_[static_cast<uint64_t>(info.pid)].info = info;
    return Status::Ok();
  }
  const uint64_t old = it->second.info.role.size() + it->second.info.framework.size();
  if (strings > old) CLAIRFS_RETURN_IF_ERROR(Charge(strings - old));
  memory_ -= std::min(memory_, old > strings ? old - strings : 0);
  it->second.info = info;
  return Status::Ok();
}

Status ReportedOrders::AddTablePaths(const ReportTablePaths& m) {
  std::vector<uint32_t> nodes;
  nodes.reserve(m.paths.size());
  uint64_t unresolved = 0;
  for (std::string_view path : m.paths) {
    nodes.push_back(ResolvePath(path));
    unresolved += nodes.back() == kNone;
  }
  MutexLock lock(&mu_);
  const uint64_t key = Canonical(m.table);
  auto it = tables_.find(key);
  const size_t have = it == tables_.end() ? 0 : it->second.entries.size();
  if (m.first != have) {
    return Status::Corruption("TABLE_PATHS of table " + std::to_string(m.table) + ": first " +
                              std::to_string(m.first) + " does not follow on (the table has " +
                              std::to_string(have) + " entries)");
  }
  if (it == tables_.end()) {
    CLAIRFS_RETURN_IF_ERROR(Charge(kEntryCost + sizeof(Table) + uint64_t{nodes.size()} * 4));
    tables_[key].entries = std::move(nodes);
  } else {
    std::vector<uint32_t>& entries = it->second.entries;
    const size_t capacity = GrownCapacity(entries, nodes.size());
    CLAIRFS_RETURN_IF_ERROR(Charge(uint64_t{capacity - entries.capacity()} * 4));
    entries.reserve(capacity);
    entries.insert(entries.end(), nodes.begin(), nodes.end());
  }
  unresolved_paths_ += unresolved;
  return Status::Ok();
}

Status ReportedOrders::AddTableFiles(const ReportTableFiles& m) {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> records;
  records.reserve(m.records.size());
  uint64_t unresolved = 0, cost = 0;
  for (const ReportFileRecord& r : m.records) {
    std::vector<uint32_t> files;
    files.reserve(r.paths.size());
    for (std::string_view path : r.paths) {
      const uint32_t node = ResolvePath(path);
      if (node == kNone) {
        ++unresolved;
      } else {
        files.push_back(node);
      }
    }
    files.shrink_to_fit();
    cost += files.empty() ? 0 : kEntryCost + VectorBytes(files);
    records.emplace_back(r.index, std::move(files));
  }
  MutexLock lock(&mu_);
  const uint64_t key = Canonical(m.table);
  auto it = tables_.find(key);
  // Charged before what it replaces is released: a frame near the limit may
  // be refused that would just have fit.
  CLAIRFS_RETURN_IF_ERROR(
      Charge(cost + (it == tables_.end() ? kEntryCost + sizeof(Table) : uint64_t{0})));
  if (it == tables_.end()) it = tables_.emplace(key, Table()).first;
  uint64_t freed = 0;
  for (auto& [index, files] : records) {
    auto old = it->second.learned.find(index);
    if (old != it->second.learned.end()) {
      freed += kEntryCost + VectorBytes(old->second);
      it->second.learned.erase(old);
    }
    if (!files.empty()) it->second.learned.emplace(index, std::move(files));
  }
  memory_ -= std::min(memory_, freed);
  unresolved_paths_ += unresolved;
  return Status::Ok();
}

Status ReportedOrders::AddAlias(const ReportAlias& m) {
  MutexLock lock(&mu_);
  const uint64_t target = Canonical(m.table);
  if (target == m.alias) return Status::Ok();  // names itself, or would close a cycle
  auto existing = aliases_.find(m.alias);
  if (existing == aliases_.end()) {
    CLAIRFS_RETURN_IF_ERROR(Charge(kEntryCost));
    aliases_.emplace(m.alias, target);
  } else {
    existing->second = target;
  }
  // What was filed under the alias before the alias was known moves to its
  // table (worker and main processes report on different connections).
  auto from = tables_.find(m.alias);
  if (from == tables_.end()) return Status::Ok();
  Table moved = std::move(from->second);
  tables_.erase(from);
  uint64_t freed = kEntryCost + sizeof(Table);
  auto [to, created] = tables_.try_emplace(target);
  if (created) {  // the table's entry moves with it
    to->second = std::move(moved);
    return Status::Ok();
  }
  if (to->second.entries.empty()) {
    std::swap(to->second.entries, moved.entries);
  } else {
    freed += VectorBytes(moved.entries);
  }
  for (auto& [index, files] : moved.learned) {
    auto old = to->second.learned.find(index);
    if (old != to->second.learned.end()) {
      freed += kEntryCost + VectorBytes(old->second);
      old->second = std::move(files);
    } else {
      to->second.learned.emplace(index, std::move(files));
    }
  }
  memory_ -= std::min(memory_, freed);
  return Status::Ok();
}

uint64_t ReportedOrders::AddSegment(uint64_t pid, StoredSegment segment) {
  std::function<void()> listener;
  uint64_t seq = 0;
  {
    MutexLock lock(&mu_);
    memory_ -= std::min(memory_, kEntryCost);  // no longer an entry of a connection's map
    Process& p = processes_[pid];              // made by the connection's HELLO
    if (p.guess) {
      memory_ -= std::min(memory_, SegmentBytes(*p.guess));
      p.guess.reset();
    }
    seq = p.completed;
    if (p.completed++ == 0) process_order_.push_back(pid);
    ++segments_;
    p.kept.push_back(std::move(segment));
    while (p.kept.size() > limits_.kept_segments) {
      memory_ -= std::min(memory_, SegmentBytes(p.kept.front()));
      p.kept.pop_front();
    }
    listener = listener_;
  }
  if (listener) listener();
  return seq;
}

void ReportedOrders::SetGuess(uint64_t pid, uint64_t seq, StoredSegment guess) {
  std::function<void()> listener;
  {
    MutexLock lock(&mu_);
    auto it = processes_.find(pid);
    if (it == processes_.end() || it->second.completed != seq || it->second.guess) return;
    // Optional: past the memory limit it is not kept (not a refusal).
    const uint64_t bytes = SegmentBytes(guess);
    if (bytes > limits_.memory_bytes || memory_ > limits_.memory_bytes - bytes) return;
    memory_ += bytes;
    it->second.guess = std::move(guess);
    listener = listener_;
  }
  if (listener) listener();
}

void ReportedOrders::SetModelMaker(ModelMaker f) {
  MutexLock lock(&mu_);
  model_maker_ = std::move(f);
}

Result<ReportedModel> ReportedOrders::MakeModel(
    const std::map<std::string, std::string>& settings) {
  ModelMaker maker;
  {
    MutexLock lock(&mu_);
    maker = model_maker_;
  }
  if (!maker) return Status::Unsupported("this daemon makes no models of sampler settings");
  // Made without the lock: a model lists the dataset.
  Result<ReportedModel> model = maker(settings);
  if (model.ok() && !model->files) return Status::Unsupported("a model without files");
  if (model.ok()) {
    MutexLock lock(&mu_);
    ++models_;
  }
  return model;
}

bool ReportedOrders::CountModelError(const Status& why) {
  MutexLock lock(&mu_);
  if (model_errors_++ != 0) return false;
  first_model_error_ = why.ToString();
  return true;
}

void ReportedOrders::SetListener(std::function<void()> f) {
  MutexLock lock(&mu_);
  listener_ = std::move(f);
}

std::vector<uint64_t> ReportedOrders::Processes() const {
  MutexLock lock(&mu_);
  return process_order_;
}

std::optional<ReporterInfo> ReportedOrders::Info(uint64_t pid) const {
  MutexLock lock(&mu_);
  auto it = processes_.find(pid);
  if (it == processes_.end()) return std::nullopt;
  return it->second.info;
}

uint64_t ReportedOrders::SegmentCount(uint64_t pid) const {
  MutexLock lock(&mu_);
  auto it = processes_.find(pid);
  return it == processes_.end() ? 0 : it->second.completed;
}

std::optional<std::pair<uint64_t, uint64_t>> ReportedOrders::SegmentLoader(uint64_t pid,
                                                                           uint64_t seq) const {
  MutexLock lock(&mu_);
  auto it = processes_.find(pid);
  if (it == processes_.end() || seq >= it->second.completed) return std::nullopt;
  const Process& p = it->second;
  const uint64_t dropped = p.completed - p.kept.size();
  if (seq < dropped) return std::nullopt;
  const StoredSegment& s = p.kept[seq - dropped];
  return std::make_pair(s.stream, s.epoch);
}

Result<ReportedSegment> ReportedOrders::Segment(uint64_t pid, uint64_t seq) const {
  MutexLock lock(&mu_);
  auto it = processes_.find(pid);
  const uint64_t completed = it == processes_.end() ? 0 : it->second.completed;
  const std::string name = "segment " + std::to_string(seq) + " of process " + std::to_string(pid);
  if (seq >= completed) {
    return Status::Unavailable(name + ": not reported yet (" + std::to_string(completed) +
                               " so far)");
  }
  const Process& p = it->second;
  const uint64_t dropped = completed - p.kept.size();
  if (seq < dropped) {
    return Status::NotFound(name + ": dropped (only the latest " +
                            std::to_string(limits_.kept_segments) + " are kept)");
  }
  return Resolve(p.kept[seq - dropped]);
}

Result<ReportedSegment> ReportedOrders::Guess(uint64_t pid, uint64_t seq) const {
  MutexLock lock(&mu_);
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.completed != seq || !it->second.guess) {
    return Status::Unavailable("no guess at segment " + std::to_string(seq) + " of process " +
                               std::to_string(pid));
  }
  return Resolve(*it->second.guess);
}

ReportedSegment ReportedOrders::Resolve(const StoredSegment& s) const {
  ReportedSegment out;
  out.stream = s.stream;
  out.epoch = s.epoch;
  out.batch_size = s.batch_size;
  out.num_workers = s.num_workers;
  out.prefetch_factor = s.prefetch_factor;
  out.read_window = s.read_window;
  out.files.reserve(s.indices.size());
  if (s.table == kNodesTable) {  // a model's files, nodes already
    out.files = s.indices;
    return out;
  }
  auto table = tables_.find(Canonical(s.table));
  for (uint32_t index : s.indices) {
    if (table != tables_.end()) {
      auto learned = table->second.learned.find(index);
      if (learned != table->second.learned.end()) {
        out.files.insert(out.files.end(), learned->second.begin(), learned->second.end());
        continue;
      }
      const std::vector<uint32_t>& entries = table->second.entries;
      if (index < entries.size() && entries[index] != kNone) {
        out.files.push_back(entries[index]);
        continue;
      }
      out.unlearned += index >= entries.size();
    } else {
      ++out.unlearned;
    }
    ++out.unresolved;
  }
  return out;
}

uint64_t ReportedOrders::memory_bytes() const {
  MutexLock lock(&mu_);
  return memory_;
}

void ReportedOrders::WriteStats(JsonWriter& w) const {
  MutexLock lock(&mu_);
  w.Integer("connections_accepted", accepted_)
      .Integer("connections_refused", refused_)
      .Integer("connections_open", open_)
      .Integer("connections_closed_bad", closed_bad_)
      .Integer("frames", frames_)
      .Integer("bytes", bytes_)
      .Integer("processes", process_order_.size())
      .Integer("segments", segments_)
      .Integer("unresolved_paths", unresolved_paths_)
      .Integer("memory_bytes", memory_)
      .Integer("memory_limit", limits_.memory_bytes)
      .Integer("memory_refusals", memory_refusals_)
      .String("first_error", first_error_)
      .Integer("models", models_)
      .Integer("model_errors", model_errors_)
      .String("first_model_error", first_model_error_);
}

}  // namespace clairfs::fs
