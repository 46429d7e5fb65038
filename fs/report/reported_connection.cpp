// ReportedOrders::Connection: one connection's frames, decoded and handed to
// its ReportedOrders (reported_orders.hpp).
#include <algorithm>
#include <unordered_set>
#include <utility>

#include "base/log.hpp"
#include "fs/report/reported_orders.hpp"

namespace clairfs::fs {
namespace {

// The files of `a` and `b` in turn (a's first), each once.
std::vector<uint32_t> Alternate(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  out.reserve(std::max(a.size(), b.size()));
  std::unordered_set<uint32_t> seen;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    for (const std::vector<uint32_t>* v : {&a, &b}) {
      if (i < v->size() && seen.insert((*v)[i]).second) out.push_back((*v)[i]);
    }
  }
  return out;
}

}  // namespace

ReportedOrders::Connection::Connection(ReportedOrders* orders)
    : orders_(orders), decoder_(orders->limits_.max_frame) {}

ReportedOrders::Connection::~Connection() {
  if (!closed_) Close(Status::Ok());
  orders_->Release(partial_bytes_);
}

Status ReportedOrders::Connection::Feed(const char* data, size_t size) {
  const uint64_t before = decoder_.frames();
  Status st = decoder_.Feed(data, size, this);
  orders_->CountFed(size, decoder_.frames() - before);
  return st;
}

bool ReportedOrders::Connection::Close(const Status& why) {
  if (closed_) return false;
  closed_ = true;
  return orders_->CountClosed(why);
}

Status ReportedOrders::Connection::OnHello(const ReportHello& m) {
  if (m.role != "main" || m.pid < 0) return Status::Ok();  // a worker: tables and files only
  main_ = true;
  pid_ = static_cast<uint64_t>(m.pid);
  return orders_->AddHello(
      ReporterInfo{m.role, m.pid, m.rank, m.world_size, m.local_rank, m.local_size, m.framework});
}

Status ReportedOrders::Connection::OnTablePaths(const ReportTablePaths& m) {
  return orders_->AddTablePaths(m);
}

Status ReportedOrders::Connection::OnTableFiles(const ReportTableFiles& m) {
  return orders_->AddTableFiles(m);
}

Status ReportedOrders::Connection::OnAlias(const ReportAlias& m) { return orders_->AddAlias(m); }

Status ReportedOrders::Connection::OnLoader(const ReportLoader& m) {
  if (loaders_.count(m.stream) == 0) {
    CLAIRFS_RETURN_IF_ERROR(orders_->Reserve(kEntryCost + sizeof(ReportLoader)));
    partial_bytes_ += kEntryCost + sizeof(ReportLoader);
  }
  loaders_[m.stream] = m;
  return Status::Ok();
}

Status ReportedOrders::Connection::OnOrder(const ReportOrder& m) {
  if (!main_) {
    return Status::Corruption(std::string(m.guess ? "GUESS" : "ORDER") +
                              " from a process whose HELLO is not role=main with a pid");
  }
  if (m.table == kNodesTable) {
    // The daemon's own: its segments' indices are taken as files unchecked.
    return Status::Corruption("ORDER over table " + std::to_string(kNodesTable) +
                              ", which is reserved");
  }
  // A GUESS is built like an ORDER's segment, beside it.
  std::map<uint64_t, StoredSegment>& partial = m.guess ? guess_partial_ : partial_;
  auto it = partial.find(m.stream);
  if (it != partial.end() && (it->second.table != m.table || it->second.epoch != m.epoch)) {
    // A loader that started over before it finished: its partial segment goes.
    const uint64_t bytes = kEntryCost + SegmentBytes(it->second);
    orders_->Release(bytes);
    partial_bytes_ -= bytes;
    partial.erase(it);
    it = partial.end();
  }
  if (it == partial.end()) {
    CLAIRFS_RETURN_IF_ERROR(orders_->Reserve(kEntryCost + sizeof(StoredSegment)));
    partial_bytes_ += kEntryCost + sizeof(StoredSegment);
    it = partial.emplace(m.stream, StoredSegment{m.table, m.stream, m.epoch, {}}).first;
  }
  std::vector<uint32_t>& indices = it->second.indices;
  const size_t capacity = GrownCapacity(indices, m.indices.size());
  if (capacity > indices.capacity()) {
    const uint64_t more = uint64_t{capacity - indices.capacity()} * 4;
    CLAIRFS_RETURN_IF_ERROR(orders_->Reserve(more));
    partial_bytes_ += more;
    indices.reserve(capacity);
  }
  for (size_t i = 0; i < m.indices.size(); ++i) indices.push_back(m.indices[i]);
  if (!m.last) return Status::Ok();
  StoredSegment done = std::move(it->second);
  partial.erase(it);
  if (auto shape = loaders_.find(m.stream); shape != loaders_.end()) {
    done.batch_size = shape->second.batch_size;
    done.num_workers = shape->second.num_workers;
    done.prefetch_factor = shape->second.prefetch_factor;
  }
  partial_bytes_ -= kEntryCost + SegmentBytes(done);
  if (m.guess) {
    // The process's guess at its next segment, charged there (if it fits).
    orders_->Release(kEntryCost + SegmentBytes(done));
    orders_->SetGuess(pid_, orders_->SegmentCount(pid_), std::move(done));
    return Status::Ok();
  }
  orders_->AddSegment(pid_, std::move(done));
  return Status::Ok();
}

Status ReportedOrders::Connection::OnSettings(const ReportSettings& m) {
  if (!main_) {
    return Status::Corruption("SETTINGS from a process whose HELLO is not role=main with a pid");
  }
  if (models_.count(m.stream) != 0) {
    return Status::Corruption("SETTINGS for stream " + std::to_string(m.stream) + " again");
  }
  if (models_.size() >= kMaxModels) {
    return Status::Corruption("SETTINGS for more than " + std::to_string(kMaxModels) +
                              " loaders on one connection");
  }
  std::map<std::string, std::string> settings;
  uint64_t text = 0;
  for (const auto& [key, value] : m.values) {
    settings.emplace(key, value);
    text += key.size() + value.size() + kEntryCost;
  }
  CLAIRFS_RETURN_IF_ERROR(orders_->Reserve(kEntryCost + text));
  partial_bytes_ += kEntryCost + text;
  Result<ReportedModel> model = orders_->MakeModel(settings);
  if (model.ok()) {
    // Charged as long as the connection holds it (refused past the bound).
    if (Status st = orders_->Reserve(model->memory_bytes); !st.ok()) model = st;
  }
  if (!model.ok()) {
    const Status why =
        model.status().WithPrefix("the settings of loader " + std::to_string(m.stream) +
                                  " of process " + std::to_string(pid_) + ": ");
    if (orders_->CountModelError(why)) {
      Log(LogLevel::kWarn, "report: " + why.ToString() + " (its epochs are not followed)");
    }
    models_.emplace(m.stream, std::nullopt);
    return Status::Ok();
  }
  partial_bytes_ += model->memory_bytes;
  models_.emplace(m.stream, std::move(*model));
  return Status::Ok();
}

Status ReportedOrders::Connection::OnEpoch(const ReportEpoch& m) {
  if (!main_) {
    return Status::Corruption("EPOCH from a process whose HELLO is not role=main with a pid");
  }
  auto it = models_.find(m.stream);
  if (it == models_.end()) {
    return Status::Corruption("EPOCH for stream " + std::to_string(m.stream) +
                              " without its SETTINGS");
  }
  if (!it->second) return Status::Ok();  // refused: said once already
  Result<std::vector<uint32_t>> files =
      m.epoch <= kMaxModelEpoch ? it->second->files(m.epoch)
                                : Status::InvalidArgument("past the models' last epoch, " +
                                                          std::to_string(kMaxModelEpoch));
  if (!files.ok()) {
    const Status why = files.status().WithPrefix("epoch " + std::to_string(m.epoch) +
                                                 " of loader " + std::to_string(m.stream) + ": ");
    if (orders_->CountModelError(why)) {
      Log(LogLevel::kWarn, "report: " + why.ToString() + " (not followed)");
    }
    return Status::Ok();
  }
  StoredSegment done{kNodesTable, m.stream, m.epoch, std::move(*files)};
  if (auto shape = loaders_.find(m.stream); shape != loaders_.end()) {
    done.batch_size = shape->second.batch_size;
    done.num_workers = shape->second.num_workers;
    done.prefetch_factor = shape->second.prefetch_factor;
  } else {
    // A framework's pipeline (tf.data) reads its elements one by one, in
    // order within the model's window: as the configured samplers say it.
    done.batch_size = 1;
    done.num_workers = 0;
    done.prefetch_factor = 2;
  }
  done.read_window = std::max<uint64_t>(1, it->second->window);
  CLAIRFS_RETURN_IF_ERROR(orders_->Reserve(kEntryCost + SegmentBytes(done)));
  // The loader's next EPOCH, guessed by the step between its last two (fit
  // on Keras 3 reads every other iteration, a plain loop every one): made
  // after the segment is in, so the reported order never waits for the
  // guess. After a loader's first EPOCH the step is not known: the guess is
  // both candidates, file by file in turn.
  auto last = last_epoch_.find(m.stream);
  const bool step_known = last != last_epoch_.end() && m.epoch > last->second;
  const uint64_t step = step_known ? m.epoch - last->second : 1;
  last_epoch_[m.stream] = m.epoch;
  StoredSegment guess{done.table,      done.stream,      done.epoch,           {},
                      done.batch_size, done.num_workers, done.prefetch_factor, done.read_window};
  const uint64_t seq = orders_->AddSegment(pid_, std::move(done));
  const uint64_t room = kMaxModelEpoch - std::min(m.epoch, kMaxModelEpoch);
  if (step > room) return Status::Ok();
  guess.epoch = m.epoch + step;
  Result<std::vector<uint32_t>> next = it->second->files(guess.epoch);
  if (!next.ok()) return Status::Ok();
  guess.indices = std::move(*next);
  if (!step_known && room >= 2) {
    Result<std::vector<uint32_t>> other = it->second->files(m.epoch + 2);
    if (other.ok()) guess.indices = Alternate(guess.indices, *other);
  }
  orders_->SetGuess(pid_, seq + 1, std::move(guess));
  return Status::Ok();
}

}  // namespace clairfs::fs
