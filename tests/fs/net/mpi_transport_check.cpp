// Run under `mpiexec -n N`: every rank reads from every other rank through
// MpiTransport, pipelined, and checks each byte, then publishes a few notices
// and checks it got every other rank's, once each and in order; exit 0 only
// if all matched.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fs/net/mpi_transport.hpp"
#include "tests/fs/net/expected_bytes.hpp"

using namespace clairfs;
using namespace clairfs::fs;

namespace {

constexpr int kNotices = 5;

std::string Notice(int rank, int i) {
  return "rank " + std::to_string(rank) + " notice " + std::to_string(i);
}

// Peers' notices by sender, as the progress thread hands them over.
struct Received {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, std::vector<std::string>> by_peer;
  int total = 0;
};

// Publishes this rank's notices, waits for every other rank's; the number of
// peers whose notices all came, once each and in order.
int ExchangeNotices(MpiTransport& mpi, Received& got) {
  for (int i = 0; i < kNotices; ++i) {
    const std::string n = Notice(mpi.rank(), i);
    if (!mpi.Publish(std::span<const char>(n.data(), n.size())).ok()) return 0;
  }
  std::unique_lock lock(got.mu);
  got.cv.wait_for(lock, std::chrono::seconds(30),
                  [&] { return got.total >= (mpi.size() - 1) * kNotices; });
  int in_order = 0;
  for (int peer = 0; peer < mpi.size(); ++peer) {
    if (peer == mpi.rank()) continue;
    std::vector<std::string> want;
    for (int i = 0; i < kNotices; ++i) want.push_back(Notice(peer, i));
    if (got.by_peer[peer] == want) ++in_order;
  }
  return got.by_peer.count(mpi.rank()) ? 0 : in_order;
}

}  // namespace

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
  Received notices;
  mpi.OnNotice([&notices](int peer, std::span<const char> notice) {
    std::lock_guard lock(notices.mu);
    notices.by_peer[peer].emplace_back(notice.begin(), notice.end());
    ++notices.total;
    notices.cv.notify_all();
  });
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
  const int peers_in_order = ExchangeNotices(mpi, notices);
  // Keep serving until every rank is done reading.
  if (!mpi.Barrier(std::chrono::steady_clock::now() + std::chrono::seconds(60)).ok()) {
    std::fprintf(stderr, "rank %d: barrier timed out\n", me);
    return 1;
  }
  std::printf("rank %d/%d: %d reads matched, %d failed\n", me, n, good.load(), bad.load());
  std::printf("rank %d/%d: %d notices from each of %d peers in order\n", me, n, kNotices,
              peers_in_order);
  std::fflush(stdout);
  mpi.Stop();
  return bad == 0 && (n == 1 || good == kReads) && peers_in_order == n - 1 ? 0 : 1;
}
