// Fixtures of the multi-node tests: a packed dataset on disk (Dataset), a
// read of every file through a store (Mismatches), and n ranks' distributed
// stores over the loopback transport (Ranks). Header-only; each test binary's
// own copy.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fs/dist/distributed_pack_store.hpp"
#include "fs/dist/ownership.hpp"
#include "fs/dist/stager.hpp"
#include "fs/net/loopback_transport.hpp"
#include "fs/store/payload_source.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/pack/packer.hpp"

namespace clairfs::fs::testing {

namespace stdfs = std::filesystem;

struct Dataset {
  // 60 files of 1,000-21,000 bytes in 4 classes, framed at 8 KiB, and
  // `large` more of kLargeFrames frames each ("big/fN").
  static constexpr uint64_t kLargeFrames = 40;
  Dataset(uint32_t partitions, uint32_t replicas, int large = 0) {
    std::string t = (stdfs::temp_directory_path() / "clairfs-dist-test.XXXXXX").string();
    root = ::mkdtemp(t.data());
    std::mt19937 rng(7);
    for (int i = 0; i < 60; ++i) {
      std::string data(1000 + rng() % 20000, '\0');
      for (auto& ch : data) ch = static_cast<char>(i % 3 ? rng() : 'a' + i % 7);
      const std::string rel = "c" + std::to_string(i % 4) + "/f" + std::to_string(i);
      stdfs::create_directories(stdfs::path(root + "/src/" + rel).parent_path());
      std::ofstream(root + "/src/" + rel, std::ios::binary) << data;
      files.emplace_back(rel, data);
    }
    std::mt19937 large_rng(11);
    for (int i = 0; i < large; ++i) {
      std::string data(kLargeFrames * 8192 - 100, '\0');
      for (auto& ch : data) ch = static_cast<char>(large_rng() % 4 ? large_rng() : 'x');
      const std::string rel = "big/f" + std::to_string(i);
      stdfs::create_directories(root + "/src/big");
      std::ofstream(root + "/src/" + rel, std::ios::binary) << data;
      files.emplace_back(rel, data);
    }
    pack::PackOptions o;
    o.src = root + "/src";
    o.out = root + "/out";
    o.partitions = partitions;
    o.replicas = replicas;
    o.frame_size = 8192;  // some files framed: several round trips per read
    REQUIRE(pack::Pack(o).ok());
    auto m = format::Manifest::Load(o.out);
    REQUIRE(m.ok());
    manifest = *m;
  }
  ~Dataset() { stdfs::remove_all(root); }
  std::string out() const { return root + "/out"; }

  std::string root;
  std::vector<std::pair<std::string, std::string>> files;
  std::shared_ptr<const format::Manifest> manifest;
};

// Reads every file through `store` and counts mismatches.
inline int Mismatches(const Dataset& d, PackStore* store) {
  PackPayloadSource source(d.manifest, store);
  int bad = 0;
  for (const auto& [rel, data] : d.files) {
    const uint32_t node = *d.manifest->Resolve(rel);
    std::string got(data.size(), '\0');
    auto n = source.Read(node, 0, got.size(), got.data());
    if (!n.ok() || *n != data.size() || got != data) ++bad;
  }
  return bad;
}

struct Ranks {
  // `stagers[r]`, where given, holds rank r's staged copies.
  Ranks(const Dataset& d, int n, DistOptions opt = {}, std::vector<Stager*> stagers = {})
      : fabric(std::make_shared<LoopbackFabric>(n)) {
    const Ownership own(d.manifest->partition_count(), d.manifest->header().replicas, n);
    stagers.resize(n, nullptr);
    for (int r = 0; r < n; ++r) {
      transports.push_back(std::make_unique<LoopbackTransport>(fabric, r));
      stores.push_back(std::make_unique<DistributedPackStore>(
          d.out(), d.manifest, own, r, transports[r].get(), stagers[r], opt));
    }
    for (int r = 0; r < n; ++r) {
      DistributedPackStore* s = stores[r].get();
      auto serve = [s](int peer, const PackRead& rd) { return s->Serve(peer, rd); };
      auto serve_now = [s](int peer, const PackRead& rd) { return s->ServeIfCached(peer, rd); };
      REQUIRE(transports[r]->Start(serve, 2, serve_now).ok());
    }
  }
  ~Ranks() {
    for (auto& t : transports) t->Stop();
  }
  std::shared_ptr<LoopbackFabric> fabric;
  std::vector<std::unique_ptr<LoopbackTransport>> transports;
  std::vector<std::unique_ptr<DistributedPackStore>> stores;
};

}  // namespace clairfs::fs::testing
