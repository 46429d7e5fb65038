// The nodes' cores as a shared device (tools/sim/node_cpu.hpp) against cases
// worked out by hand, the model off with cores 0, and its config keys.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tools/sim/event_loop.hpp"
#include "tools/sim/node_cpu.hpp"
#include "tools/sim/sim_config.hpp"
#include "tools/sim/simulate.hpp"

using namespace clairfs::sim;

namespace {
// Starts `seconds` of work on `cpu` at time `at`, recording when it is done.
void WorkAt(EventLoop& loop, NodeCpu& cpu, double at, double seconds, double* done) {
  loop.After(at, [&loop, &cpu, seconds, done] {
    cpu.Run(seconds, [&loop, done] { *done = loop.now(); });
  });
}
}  // namespace

TEST_CASE("cpu: works share a node's cores equally, none faster than one core", "[sim]") {
  EventLoop loop;
  double a = -1, b = -1, c = -1;
  SECTION("two works on one core take twice as long") {
    NodeCpu cpu(&loop, 1);
    WorkAt(loop, cpu, 0, 1, &a);
    WorkAt(loop, cpu, 0, 1, &b);
    loop.Run();
    CHECK(a == Approx(2.0));
    CHECK(b == Approx(2.0));
    CHECK(cpu.work_seconds() == Approx(2.0));
  }
  SECTION("with as many cores as works, they do not slow each other") {
    NodeCpu cpu(&loop, 2);
    WorkAt(loop, cpu, 0, 1, &a);
    WorkAt(loop, cpu, 0, 1, &b);
    loop.Run();
    CHECK(a == Approx(1.0));
    CHECK(b == Approx(1.0));
  }
  SECTION("one joining half way on one core") {
    // A alone 0.5 s (0.5 done), then both at half speed: A's last 0.5 s of
    // work takes 1 s (done at 1.5); B has had 0.5 by then and ends alone at 2.
    NodeCpu cpu(&loop, 1);
    WorkAt(loop, cpu, 0, 1, &a);
    WorkAt(loop, cpu, 0.5, 1, &b);
    loop.Run();
    CHECK(a == Approx(1.5));
    CHECK(b == Approx(2.0));
  }
  SECTION("three works on two cores run at 2/3 each, then the last alone") {
    // All at 2/3 until the two short ones end at 0.75 (0.5 s of work each);
    // the long one has had 0.5 then and runs its last 0.5 at full speed.
    NodeCpu cpu(&loop, 2);
    WorkAt(loop, cpu, 0, 0.5, &a);
    WorkAt(loop, cpu, 0, 0.5, &b);
    WorkAt(loop, cpu, 0, 1, &c);
    loop.Run();
    CHECK(a == Approx(0.75));
    CHECK(b == Approx(0.75));
    CHECK(c == Approx(1.25));
    CHECK(cpu.in_progress() == 0);
  }
}

TEST_CASE("cpu: with cores 0 a work is a wait that shares nothing", "[sim]") {
  EventLoop loop;
  NodeCpus cpus(&loop, 2, 0);
  CHECK_FALSE(cpus.modelled());
  std::vector<double> done;
  for (int i = 0; i < 3; ++i) cpus.Run(0, 1, [&] { done.push_back(loop.now()); });
  loop.Run();
  CHECK(done == std::vector<double>{1, 1, 1});
  CHECK(cpus.work_seconds(0) == 0);
}

namespace {
const char* kSmall = R"(
job: {nodes: 2, ranks_per_node: 2, batch_size: 4, compute_seconds: 0.01, epochs: 2, workers: 2,
      file_seconds: 0.002}
dataset: {files: 400, file_size: 64K, file_size_stdev: 16K}
shared_fs: {bandwidth: 50M, iops: 2000}
node: {ram: 8M}
)";

// `yaml` with `from` replaced by `to`.
std::string With(std::string yaml, const std::string& from, const std::string& to) {
  const size_t at = yaml.find(from);
  REQUIRE(at != std::string::npos);
  return yaml.replace(at, from.size(), to);
}

std::vector<double> Seconds(const std::string& yaml, const std::string& policy) {
  auto c = ParseSimConfig(yaml);
  REQUIRE(c.ok());
  auto run = RunPolicy(*c, policy, DatasetSizes(*c));
  REQUIRE(run.ok());
  std::vector<double> out;
  for (const auto& e : run->epochs) out.push_back(e.seconds);
  return out;
}
}  // namespace

TEST_CASE("cpu: cores 0 changes nothing, whatever the costs say", "[sim]") {
  const std::string costs = std::string(kSmall) +
                            "clairfs: {cpu_stage_ns_per_byte: 50, cpu_serve_ns_per_byte: 50, "
                            "cpu_peer_ns_per_byte: 50, cpu_open_us: 500}\n";
  for (const char* policy : {"shared-fs", "fanstore", "nopfs", "clairfs"}) {
    INFO(policy);
    const auto without = Seconds(kSmall, policy);
    CHECK(Seconds(With(kSmall, "node: {ram: 8M}", "node: {ram: 8M, cores: 0}"), policy) == without);
    CHECK(Seconds(costs, policy) == without);  // exactly: the same events
  }
}

TEST_CASE("cpu: with a core per work nothing slows; one core shared slows the job", "[sim]") {
  // 2 ranks x 2 workers per node: at most 4 decodings and 2 steps at once.
  const std::string on_cpu = With(kSmall, "workers: 2,", "workers: 2, compute_on_cpu: true,");
  for (const char* policy : {"shared-fs", "nopfs"}) {
    INFO(policy);
    const auto free = Seconds(kSmall, policy);
    const auto many = Seconds(With(on_cpu, "node: {ram: 8M}", "node: {ram: 8M, cores: 6}"), policy);
    const auto one = Seconds(With(on_cpu, "node: {ram: 8M}", "node: {ram: 8M, cores: 1}"), policy);
    REQUIRE(many.size() == free.size());
    REQUIRE(one.size() == free.size());
    for (size_t e = 0; e < free.size(); ++e) {
      CHECK(many[e] == Approx(free[e]).epsilon(1e-9));
      CHECK(one[e] > free[e] * 1.05);
    }
  }
  // clairfs's daemon takes its share: its first epoch is longer with the
  // daemon's costs than with none, on the same one core.
  const std::string one_core = With(on_cpu, "node: {ram: 8M}", "node: {ram: 8M, cores: 1}");
  const auto daemon = Seconds(one_core, "clairfs");
  const auto idle = Seconds(one_core +
                                "clairfs: {cpu_stage_ns_per_byte: 0, cpu_serve_ns_per_byte: 0, "
                                "cpu_peer_ns_per_byte: 0, cpu_open_us: 0}\n",
                            "clairfs");
  CHECK(daemon[0] > idle[0]);
}

TEST_CASE("cpu: the config's keys are read and their bad values named", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {compute_on_cpu: true}
node: {cores: 1.5}
clairfs: {cpu_stage_ns_per_byte: 3.3, cpu_serve_ns_per_byte: 3, cpu_peer_ns_per_byte: 3.6,
          cpu_open_us: 73}
)");
  REQUIRE(c.ok());
  CHECK(c->job.compute_on_cpu);
  CHECK(c->cores == 1.5);
  CHECK(c->cpu_per_staged_byte == Approx(3.3e-9));
  CHECK(c->cpu_per_served_byte == Approx(3e-9));
  CHECK(c->cpu_per_peer_byte == Approx(3.6e-9));
  CHECK(c->cpu_per_open == Approx(73e-6));
  auto d = ParseSimConfig("");
  REQUIRE(d.ok());
  CHECK(d->cores == 0);
  CHECK_FALSE(d->job.compute_on_cpu);

  auto bad = ParseSimConfig(R"(
job: {compute_on_cpu: maybe}
node: {cores: many}
clairfs: {cpu_stage_ns_per_byte: -1, cpu_serve_ns_per_byte: fast, cpu_peer_ns_per_byte: [1],
          cpu_open_us: -73, cpu_seconds: 1}
)");
  REQUIRE_FALSE(bad.ok());
  const std::string m = bad.status().message();
  for (const char* want :
       {"job.compute_on_cpu: bad value 'maybe'", "node.cores: bad value 'many'",
        "clairfs.cpu_stage_ns_per_byte: bad value '-1'",
        "clairfs.cpu_serve_ns_per_byte: bad value 'fast'",
        "clairfs.cpu_peer_ns_per_byte: bad value", "clairfs.cpu_open_us: bad value '-73'",
        "clairfs.cpu_seconds: unknown key"}) {
    INFO(want);
    CHECK(m.find(want) != std::string::npos);
  }
  auto alone = ParseSimConfig("job: {compute_on_cpu: true}\n");
  REQUIRE_FALSE(alone.ok());
  CHECK(alone.status().message() ==
        "job.compute_on_cpu: needs node.cores (the CPU is not modelled without it)");
}
