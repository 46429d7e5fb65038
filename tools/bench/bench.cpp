#include "tools/bench/bench.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

namespace clairfs::bench {
namespace {

// Reads (or stats) one file; returns 0 or an errno value.
int OneFile(const std::string& path, Mode mode, std::vector<char>* buf, uint64_t* bytes) {
  if (mode == Mode::kMetadata) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  if (mode == Mode::kRead) {
    for (;;) {
      ssize_t n = ::read(fd, buf->data(), buf->size());
      if (n < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      if (n == 0) break;
      *bytes += static_cast<uint64_t>(n);
    }
  }
  ::close(fd);
  return err;
}

}  // namespace

std::vector<std::string> WalkFiles(const std::string& dir) {
  std::vector<std::string> out;
  namespace sfs = std::filesystem;
  for (auto it = sfs::recursive_directory_iterator(dir); it != sfs::recursive_directory_iterator();
       ++it) {
    if (it->is_regular_file()) out.push_back(sfs::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Order(std::vector<std::string> files, uint64_t seed, uint64_t limit) {
  std::sort(files.begin(), files.end());
  std::mt19937_64 rng(seed);
  std::shuffle(files.begin(), files.end(), rng);
  if (limit != 0 && files.size() > limit) files.resize(limit);
  return files;
}

BenchResult RunBench(const std::vector<std::string>& ordered, const BenchOptions& options) {
  std::vector<std::string> paths;
  paths.reserve(ordered.size());
  for (const std::string& f : ordered) {
    paths.push_back(options.root.empty() ? f : options.root + "/" + f);
  }
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0}, errors{0};
  std::mutex error_mu;
  BenchResult result;
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> workers;
    for (uint32_t t = 0; t < std::max<uint32_t>(1, options.threads); ++t) {
      workers.emplace_back([&] {
        std::vector<char> buf(options.chunk);
        uint64_t mine = 0;
        for (size_t i = next++; i < paths.size(); i = next++) {
          int err = OneFile(paths[i], options.mode, &buf, &mine);
          if (err != 0) {
            if (errors++ == 0) {
              std::lock_guard<std::mutex> lock(error_mu);
              result.first_error = paths[i] + ": " + std::strerror(err);
            }
          }
        }
        bytes += mine;
      });
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.files = paths.size();
  result.bytes = bytes;
  result.errors = errors;
  return result;
}

}  // namespace clairfs::bench
