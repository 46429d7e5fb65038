// Run under `mpiexec -n N`: every rank reads from every other rank through
// MpiTransport, pipelined, and checks each byte; exit 0 only if all matched.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <memory>
#include <vector>

#include "fs/net/mpi_transport.hpp"
#include "tests/fs/net/expected_bytes.hpp"

using namespace clairfs;
using namespace clairfs::fs;

int main(int argc, char** argv) {
  auto t = MpiTransport::Init(&argc, &argv);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    return 1;
  }
  MpiTransport& mpi = **t;
  const int me = mpi.rank(), n = mpi.size();
  std::vector<char> greeting;
  if (me == 0) greeting.assign({'h', 'e', 'l', 'l', 'o'});
  if (!mpi.Broadcast(&greeting, 0, std::chrono::steady_clock::now() + std::chrono::seconds(30))
           .ok() ||
      greeting.size() != 5) {
    std::fprintf(stderr, "rank %d: broadcast failed\n", me);
    return 1;
  }
  Status st = mpi.Start(
      [me](int, const PackRead& r) -> Result<std::vector<char>> {
        return testing::ExpectedBytes(me, r);
      },
      2);
  if (!st.ok()) return 1;
  std::atomic<int> good{0}, bad{0};
  std::vector<std::future<void>> waits;
  const int kReads = 500;
  for (int i = 0; i < kReads && n > 1; ++i) {
    const int peer = (me + 1 + i % (n - 1)) % n;
    PackRead read{static_cast<uint32_t>(i % 5), static_cast<uint64_t>(i) * 4099,
                  static_cast<uint32_t>(1 + (i * 7919) % 300000)};
    auto p = std::make_shared<std::promise<void>>();
    waits.push_back(p->get_future());
    mpi.Read(
        peer, read, std::chrono::steady_clock::now() + std::chrono::seconds(30),
        [&, p, peer, read](Result<std::span<const char>> r) {
          (r.ok() && std::ranges::equal(*r, testing::ExpectedBytes(peer, read)) ? good : bad)++;
          p->set_value();
        });
  }
  for (auto& w : waits) w.wait();
  // Keep serving until every rank is done reading.
  if (!mpi.Barrier(std::chrono::steady_clock::now() + std::chrono::seconds(60)).ok()) {
    std::fprintf(stderr, "rank %d: barrier timed out\n", me);
    return 1;
  }
  std::printf("rank %d/%d: %d reads matched, %d failed\n", me, n, good.load(), bad.load());
  std::fflush(stdout);
  mpi.Stop();
  return bad == 0 && (n == 1 || good == kReads) ? 0 : 1;
}
