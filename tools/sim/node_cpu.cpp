#include "tools/sim/node_cpu.hpp"

#include <algorithm>
#include <utility>

namespace clairfs::sim {

double NodeCpu::Rate() const {
  if (works_.empty()) return 1;
  return std::min(1.0, cores_ / static_cast<double>(works_.size()));
}

void NodeCpu::Advance() {
  // Idle, the count starts again (keeps the sums small over a long run).
  attained_ = works_.empty() ? 0 : attained_ + (loop_->now() - updated_) * Rate();
  updated_ = loop_->now();
}

void NodeCpu::Run(double seconds, EventLoop::Fn done) {
  if (!(seconds > 0)) return loop_->After(0, std::move(done));
  Advance();
  // multimap keeps equal keys in insertion order: equal finishes complete in
  // the order the works came.
  works_.emplace(attained_ + seconds, Work{seconds, std::move(done)});
  Reschedule();
}

void NodeCpu::Reschedule() {
  const uint64_t generation = ++generation_;
  if (works_.empty()) return;
  const double left = std::max(0.0, works_.begin()->first - attained_);
  loop_->After(left / Rate(), [this, generation] { Complete(generation); });
}

void NodeCpu::Complete(uint64_t generation) {
  if (generation != generation_) return;  // the works changed since: a later event decides
  Advance();
  // What the clock's rounding leaves is not a core's work.
  constexpr double kSlack = 1e-12;
  std::vector<EventLoop::Fn> done;
  while (!works_.empty() && works_.begin()->first <= attained_ + kSlack) {
    work_seconds_ += works_.begin()->second.seconds;
    done.push_back(std::move(works_.begin()->second.done));
    works_.erase(works_.begin());
  }
  Reschedule();
  for (auto& fn : done) fn();
}

NodeCpus::NodeCpus(EventLoop* loop, uint32_t nodes, double cores) : loop_(loop) {
  if (!(cores > 0)) return;
  cpus_.reserve(nodes);
  for (uint32_t n = 0; n < nodes; ++n) cpus_.push_back(std::make_unique<NodeCpu>(loop, cores));
}

void NodeCpus::Run(uint32_t node, double seconds, EventLoop::Fn done) {
  if (cpus_.empty()) return loop_->After(seconds, std::move(done));
  cpus_[node]->Run(seconds, std::move(done));
}

double NodeCpus::work_seconds(uint32_t node) const {
  return cpus_.empty() ? 0 : cpus_[node]->work_seconds();
}

}  // namespace clairfs::sim
